"""The application's own workflows: business processes with an agent as one of their steps."""

from workflows.order_refund import OrderRefund, RefundOutcome, RefundRequest

__all__ = ["OrderRefund", "RefundOutcome", "RefundRequest"]
