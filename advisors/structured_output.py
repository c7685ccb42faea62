"""``StructuredOutputValidationAdvisor``: re-ask the model, told the validation errors, until the reply
is the requested type (Spring AI's advisor of that name).

``spec.call().entity(T, retries=N)`` puts one in the request; it can also be registered like any
advisor. It sits inside the tool loop (Spring's order, ``AdvisorOrder.LOWEST - 2000``): a re-ask is
one more model call for the round being answered, so no tool runs twice and advisors between it and
the model (a higher order) see every attempt, while the tool loop, memory and the advisors outside
it see one validated reply. Replies that call tools are passed on unjudged.

Each final reply it judged carries the record in ``ChatResponseMetadata.extra["structured_output"]``
(``chatclient.structured_output.structured_output_attempts`` reads it), and its usage is the sum of
every attempt's. In ``stream()``/``astream()`` the deltas of a reply are delivered before it can be
judged, so a stream is judged once and not re-asked: the record says whether it validated.

The advisor lives in :mod:`chatclient.structured_output`, beside the validation it shares with
``entity()``; this module is where applications import it from.
"""

from chatclient.structured_output import StructuredOutputValidationAdvisor

__all__ = ["StructuredOutputValidationAdvisor"]
