"""Temporal activities: the model call, the tool call, the transcript store, delegation, the webhook delivery.
Programs import the face, `duragent`, not this package."""

if __name__ == "activities":  # 0.1's top-level name, from a source checkout: the same package (CHANGELOG.md)
    from duragent._moved import moved_package

    moved_package(__name__, "duragent.activities", replace=True)
