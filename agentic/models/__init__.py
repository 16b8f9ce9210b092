from agentic.models.base import Model, ModelReply, Pricing, ToolSchema
from agentic.models.fake import FakeModel

__all__ = ["FakeModel", "Model", "ModelReply", "Pricing", "ToolSchema"]
