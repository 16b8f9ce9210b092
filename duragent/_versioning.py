"""Worker Versioning: a worker that says which build of which deployment it is, so that Temporal keeps each run
on the build it started on (docs/operations.md, "Deploying a new version").

A versioned worker polls as `deployment:build_id`; the server sends a new run to the deployment's *current*
version, and every later task of a pinned run (`AgentWorkflow`'s behaviour, duragent/_workflows/agent.py) to the build
it started on. Deploying code that would not replay a run's history then breaks nothing: the old build's
workers finish the old runs while new runs start on the new build. An operator moves the deployment from one
build to the next with `temporal worker deployment set-current-version` (and back, to roll back).

Neither set: an unversioned worker, exactly as before — any worker on the task queue takes any task, and
`workflow.patched` is the only protection of runs in flight.
"""

from __future__ import annotations

from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig


class WorkerVersioningError(ValueError):
    """The deployment name and build id do not make a version (one without the other, or a malformed one)."""


def worker_deployment(deployment: str | None, build_id: str | None) -> WorkerDeploymentConfig | None:
    """The Worker Versioning configuration of a worker serving `build_id` of `deployment`; None for neither
    (an unversioned worker).

    Each workflow registered on a versioned worker must declare its versioning behaviour (the SDK refuses one
    that does not, at worker construction): no default here, so a workflow added later cannot silently pick one.
    """
    deployment, build_id = (deployment or "").strip(), (build_id or "").strip()
    if not deployment and not build_id:
        return None
    if not deployment or not build_id:
        given, missing = (
            ("a build id", "deployment name (--deployment, TEMPORAL_DEPLOYMENT_NAME)")
            if build_id
            else ("a deployment name", "build id (--build-id, TEMPORAL_WORKER_BUILD_ID)")
        )
        raise WorkerVersioningError(
            f"Worker Versioning needs both a deployment name and a build id: {given} is set but no {missing}"
        )
    # The server's own rules (it would refuse every poll, and the SDK retry them forever: a worker up that never
    # serves). A version is written `deployment:build_id` (visibility's TemporalWorkerDeploymentVersion), once
    # `deployment.build_id`; build ids starting with `__` are reserved (`__unversioned__`).
    bad = sorted({c for c in deployment if c in ".:"})
    if bad:
        raise WorkerVersioningError(f"deployment name {deployment!r}: may not contain {' or '.join(map(repr, bad))}")
    if build_id.startswith("__"):
        raise WorkerVersioningError(f"build id {build_id!r}: may not start with '__' (reserved by Temporal)")
    return WorkerDeploymentConfig(version=WorkerDeploymentVersion(deployment, build_id), use_worker_versioning=True)
