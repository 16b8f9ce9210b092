"""The application's own activities: the services its workflows call (here, the orders service)."""

from activities.orders import Notice, Order, OrderActivities, UnknownOrder

__all__ = ["Notice", "Order", "OrderActivities", "UnknownOrder"]
