from agentic.models.base import Model, ModelDelta, ModelReply, ModelSettings, OnDelta, Pricing, ToolSchema
from agentic.models.fake import FakeModel

__all__ = ["FakeModel", "Model", "ModelDelta", "ModelReply", "ModelSettings", "OnDelta", "Pricing", "ToolSchema"]
