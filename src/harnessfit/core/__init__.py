"""The nouns every stage shares, and nothing else: no stage logic lives here, and core imports no stage.

- ``trajectory``: ``Trajectory`` / ``Step`` / ``ToolCall`` / ``Provenance`` (what a reader produces);
- ``conversation``: ``Conversation`` / ``ConversationMeta`` (what the harness would send);
- ``rejection``: ``Reason``, ``Failure``, ``Rejection`` and the one builder ``reject``;
- ``records``: ``SFTRecord`` / ``DecisionPoint`` (training records derived from conversations);
- ``ids``: content-derived ids (``content_id``, ``root_request_id``);
- ``jsonio``: deterministic JSON bytes and the one JSONL reader (``iter_jsonl`` / ``read_jsonl``).

Stages import down into core (``from harnessfit.core import Trajectory``), never the other way round.
"""

from harnessfit.core.conversation import Conversation, ConversationMeta, PrefixInfo
from harnessfit.core.ids import content_id, normalise_prompt, root_request_id
from harnessfit.core.records import DecisionPoint, SFTRecord
from harnessfit.core.rejection import Failure, Reason, Rejection, reject
from harnessfit.core.trajectory import Provenance, Step, ToolCall, Trajectory

__all__ = [
    "Conversation",
    "ConversationMeta",
    "DecisionPoint",
    "Failure",
    "PrefixInfo",
    "Provenance",
    "Reason",
    "Rejection",
    "SFTRecord",
    "Step",
    "ToolCall",
    "Trajectory",
    "content_id",
    "normalise_prompt",
    "reject",
    "root_request_id",
]
