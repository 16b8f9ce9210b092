"""`AgentWorkflow`'s names on the wire: what clients, visibility queries, the Temporal CLI and runs in flight know
it by — never renamed. Code names them through these constants, not the strings. (The activities, which never
import workflow code, check the type by their own constant: duragent/_activities/caller.py.)"""

WORKFLOW_TYPE = "AgentWorkflow"
PROGRESS_QUERY = "progress"
APPROVALS_QUERY = "approvals"
DECISION_SIGNAL = "decision"
DECIDE_UPDATE = "decide"

# The conversation workflow (duragent/_workflows/conversation.py): one per user thread, each turn an AgentWorkflow.
CONVERSATION_WORKFLOW_TYPE = "ConversationWorkflow"
SEND_UPDATE = "send"
WAIT_TURN_UPDATE = "wait_turn"
CLOSE_UPDATE = "close"
CONVERSATION_QUERY = "conversation"
