"""The model inquiry backend: questions for the assistant answered by the model.

RFD 033's design over the official SDKs. The built-in ``answer_inquiry`` tool
is in every request of a turn that has tools (:func:`turn_tools`); an inquiry
request is the turn's request grown by the paused tool call and the question,
with the tool choice forced to ``answer_inquiry``. Tools and system prompt stay
byte-identical, so the provider's prompt cache holds.

- :class:`ModelInquiryBackend`: the provider-agnostic core, an
  ``InquiryBackend``; :func:`backend_from_config` builds one,
  :func:`check_backend_config` checks a configuration without building
  anything, and :func:`key_variable` names the variable its API key is
  read from.
- :class:`AnthropicAdapter`, :class:`OpenAIAdapter`: the translations to the
  Messages and Chat Completions APIs (the ``anthropic`` and ``openai`` extras,
  imported only when an adapter is made).
- :func:`anthropic_tool_calls`, :func:`anthropic_tool_results`,
  :func:`openai_tool_calls`, :func:`openai_tool_results`: an embedder's agent
  loop, a reply's tool calls in and the coordinator's responses out, from the
  SDKs' objects or plain dicts (:class:`ToolCallShapeError` for a call they
  cannot read).

This package does **not** run ``answer_inquiry`` when the model calls it
outside an inquiry; the coordinator's built-in executor answers such a call
with :data:`ANSWER_INQUIRY_OUTSIDE_INQUIRY`.
"""

from coordinator.adapters.providers._answers import (
    AnswerRejectedError,
    extract_answer,
    parse_answer,
)
from coordinator.adapters.providers._anthropic import AnthropicAdapter
from coordinator.adapters.providers._config import (
    CONFIG_KEYS,
    backend_from_config,
    check_backend_config,
    key_variable,
)
from coordinator.adapters.providers._embedding import (
    ToolCallShapeError,
    anthropic_tool_calls,
    anthropic_tool_results,
    openai_tool_calls,
    openai_tool_results,
)
from coordinator.adapters.providers._errors import ProviderConfigError, ProviderError
from coordinator.adapters.providers._messages import answer_instruction, question_message
from coordinator.adapters.providers._model_backend import (
    DEFAULT_ANSWER_RETRIES,
    ModelInquiryBackend,
    ProviderAdapter,
)
from coordinator.adapters.providers._openai import OpenAIAdapter
from coordinator.adapters.providers._requests import (
    ModelReply,
    ModelRequest,
    ProviderEvent,
    ReplyToolCall,
    ToolChoice,
    inquiry_request,
    turn_request,
)
from coordinator.adapters.providers._tools import (
    ANSWER_INQUIRY,
    ANSWER_INQUIRY_OUTSIDE_INQUIRY,
    ANSWER_INQUIRY_TOOL,
    ToolDefinition,
    turn_tools,
)

__all__ = [
    "ANSWER_INQUIRY",
    "ANSWER_INQUIRY_OUTSIDE_INQUIRY",
    "ANSWER_INQUIRY_TOOL",
    "CONFIG_KEYS",
    "DEFAULT_ANSWER_RETRIES",
    "AnswerRejectedError",
    "AnthropicAdapter",
    "ModelInquiryBackend",
    "ModelReply",
    "ModelRequest",
    "OpenAIAdapter",
    "ProviderAdapter",
    "ProviderConfigError",
    "ProviderError",
    "ProviderEvent",
    "ReplyToolCall",
    "ToolCallShapeError",
    "ToolChoice",
    "ToolDefinition",
    "answer_instruction",
    "anthropic_tool_calls",
    "anthropic_tool_results",
    "backend_from_config",
    "check_backend_config",
    "extract_answer",
    "inquiry_request",
    "key_variable",
    "openai_tool_calls",
    "openai_tool_results",
    "parse_answer",
    "question_message",
    "turn_request",
    "turn_tools",
]
