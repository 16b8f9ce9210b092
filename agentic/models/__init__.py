from agentic.models.base import Model, ModelReply, ModelSettings, Pricing, ToolSchema
from agentic.models.fake import FakeModel

__all__ = ["FakeModel", "Model", "ModelReply", "ModelSettings", "Pricing", "ToolSchema"]
