"""Prompt templates (issue 33, item 1): ``{name}`` parameters with ``{{``/``}}`` escapes, checked when the
request is built; a renderer SPI with a Jinja adapter; the built-in advisors' prompts as templates."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from chatclient import ChatClient, ConfigurationError, SystemMessage, UserMessage
from chatclient.memory.compaction import CompactionPlan, RecursiveSummary
from chatclient.structured_output import StructuredOutputValidationAdvisor
from chatclient.templates import BraceRenderer, JinjaRenderer, PromptTemplate, TemplateRenderer, render_template
from chatclient.testing import ScriptedChatModel


def _texts(model: ScriptedChatModel) -> list[tuple[str, str | None]]:
    return [(m.role, getattr(m, "text", None)) for m in model.prompts[-1].messages]


def test_system_and_user_templates_are_rendered_with_their_params() -> None:
    model = ScriptedChatModel(["ok"])
    client = ChatClient.create(model)
    client.prompt().system("You are {role}.", params={"role": "a pirate"}).user(
        "Tell me about {topic} in {{JSON}}", params={"topic": "owls"}
    ).call().content()
    assert _texts(model) == [("system", "You are a pirate."), ("user", "Tell me about owls in {JSON}")]


def test_the_builders_defaults_take_params_and_a_request_replaces_them() -> None:
    model = ScriptedChatModel(["a", "b"])
    client = (
        ChatClient.builder(model)
        .default_system("Answer as {persona}.", params={"persona": "a librarian"})
        .default_user("Summarise {book}", params={"book": "Dune"})
        .build()
    )
    client.prompt().call().content()
    assert _texts(model) == [("system", "Answer as a librarian."), ("user", "Summarise Dune")]
    client.prompt("Plain {braces} stay as written").call().content()  # no params: no template
    assert _texts(model)[-1] == ("user", "Plain {braces} stay as written")


def test_text_without_params_is_sent_as_written() -> None:
    model = ScriptedChatModel(["ok"])
    ChatClient.create(model).prompt().system("{not a template}").user("{{x}} }").call().content()
    assert _texts(model) == [("system", "{not a template}"), ("user", "{{x}} }")]


@pytest.mark.parametrize(
    ("text", "params", "message"),
    [
        ("About {topic}", {}, r"The user text: .*needs 'topic', which the params do not give"),
        ("About {topic}", {"topc": 1}, r"needs 'topic' \(did you mean 'topc'\?\).*give 'topc', which the template"),
        ("About owls", {"topic": "owls"}, r"the params give 'topic', which the template does not use"),
        ("About {topic", {"topic": 1}, r"'\{topic' at position 6: .*write '\{\{' and '\}\}' for literal braces"),
        ("About } x", {"x": 1}, r"lone '\}' at position 6"),
    ],
)
def test_a_template_that_does_not_fit_its_params_fails_when_the_request_is_built(
    text: str, params: dict[str, Any], message: str
) -> None:
    model = ScriptedChatModel(["never"])
    spec = ChatClient.create(model).prompt().user(text, params=params)  # making the spec is fine
    with pytest.raises(ConfigurationError, match=message):
        spec.call().content()
    with pytest.raises(ConfigurationError, match=message):
        "".join(spec.stream().content())
    with pytest.raises(ConfigurationError, match=message):
        asyncio.run(spec.acall().content())
    assert model.prompts == [], "nothing reached the model"


def test_a_system_template_error_names_the_system_text() -> None:
    spec = ChatClient.create(ScriptedChatModel(["x"])).prompt("hi").system("You are {role}", params={})
    with pytest.raises(ConfigurationError, match=r"^The system text: .*needs 'role'"):
        spec.call().content()


def test_params_must_be_a_mapping_of_names() -> None:
    spec = ChatClient.create(ScriptedChatModel(["x"])).prompt()
    with pytest.raises(TypeError, match=r"user\(params=...\) takes a mapping"):
        spec.user("{a}", params=[("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"system\(params=...\) takes a mapping"):
        spec.system("{a}", params={1: "a"})  # type: ignore[dict-item]


def test_params_are_copied_when_given() -> None:
    model = ScriptedChatModel(["ok"])
    params = {"topic": "owls"}
    spec = ChatClient.create(model).prompt().user("About {topic}", params=params)
    params["topic"] = "bats"
    spec.call().content()
    assert _texts(model) == [("user", "About owls")]


class Shouting:
    """A renderer of one's own: the SPI is one method."""

    def render(self, template: str, params: Mapping[str, Any]) -> str:
        return render_template(template, params).upper()


def test_a_renderer_of_ones_own_and_jinja_plug_in() -> None:
    assert isinstance(Shouting(), TemplateRenderer)
    model = ScriptedChatModel(["a", "b", "c"])
    client = ChatClient.builder(model).template_renderer(Shouting()).build()
    client.prompt().user("hi {name}", params={"name": "ada"}).call().content()
    assert _texts(model) == [("user", "HI ADA")]
    jinja = client.prompt().template_renderer(JinjaRenderer())
    jinja.user("{% for t in topics %}{{ t }};{% endfor %}", params={"topics": ["owls", "bats"]}).call().content()
    assert _texts(model) == [("user", "owls;bats;")]
    with pytest.raises(ConfigurationError, match=r"needs 'topics'.*give 'topic'"):
        jinja.user("{{ topics }}", params={"topic": 1}).call().content()
    with pytest.raises(TypeError, match=r"template_renderer\(\) takes an object with render"):
        client.prompt().template_renderer("jinja")  # type: ignore[arg-type]


def test_the_jinja_renderer_is_sandboxed() -> None:
    with pytest.raises(Exception, match=r"unsafe|not safely callable|access to attribute"):
        JinjaRenderer().render("{{ x.__class__.__mro__ }}", {"x": 1})


def test_a_prompt_template_checks_its_advisors_parameters_where_it_is_written() -> None:
    assert PromptTemplate("{a} and {b}").expecting("a", "b").render(a=1, b=2) == "1 and 2"
    with pytest.raises(ConfigurationError, match=r"needs 'c'"):
        PromptTemplate("{a} {c}").expecting("a")
    with pytest.raises(ConfigurationError, match=r"'\{a' at position 0"):
        PromptTemplate("{a")
    assert BraceRenderer().names("{x}{{y}}{z}") == frozenset({"x", "z"})


class City(BaseModel):
    name: str


def test_the_structured_output_re_ask_is_a_replaceable_template() -> None:
    model = ScriptedChatModel(["not json", '{"name": "Paris"}'])
    advisor = StructuredOutputValidationAdvisor(City, reask_template="Try {attempt} failed ({error}). JSON only!")
    city = ChatClient.create(model).prompt("A city?").advisors(advisor).call().entity(City)
    assert city == City(name="Paris")
    reask = model.prompts[1].last_user_message
    assert reask is not None and reask.text is not None
    assert reask.text.startswith("A city?\n\nTry 1 failed (The model's reply does not")
    assert "). JSON only!" in reask.text
    with pytest.raises(ConfigurationError, match=r"needs 'reason'"):
        StructuredOutputValidationAdvisor(City, reask_template="{reason}")


def test_the_memory_summary_prompt_is_a_replaceable_template() -> None:
    summary = RecursiveSummary(
        ChatClient.create(ScriptedChatModel(["s"])),
        transcript_template=PromptTemplate("Before: {previous_summary}\nNow:\n{turns}"),
    )
    plan = CompactionPlan(base_version=0, first_kept_seq=0, dropped=(), previous_summary=(), summariser=summary)
    messages = summary.request(plan)
    assert messages[0] == SystemMessage(summary.instructions)
    assert messages[1] == UserMessage("Before:  none\nNow:\n")
    with pytest.raises(ConfigurationError, match=r"the params give 'turns'"):
        RecursiveSummary(
            ChatClient.create(ScriptedChatModel(["s"])), transcript_template=PromptTemplate("{previous_summary}")
        )
