"""The tool loop on a scripted model: two tools, one parallel round, the final answer.

The model is scripted (offline), the loop is real: arguments are validated, both tools run
concurrently, their results go back to the model, and the loop ends on the answer. The same code
runs against any provider. Run: ``make demo``.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, Field

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage, tool
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import FunctionToolCallback


class WeatherRequest(BaseModel):
    city: Annotated[str, Field(description="City name, e.g. Beijing")]


def get_weather(request: WeatherRequest) -> dict[str, object]:
    return {"city": request.city, "condition": "sunny", "celsius": 28}


weather_tool = (
    FunctionToolCallback.builder("get_weather", get_weather)
    .description("Get today's weather for a city")
    .input_type(WeatherRequest)
    .build()
)


class SalesTools:
    def __init__(self) -> None:
        self.queries = 0

    @tool(description="Sales total of a period")
    def query_sales(self, period: Annotated[str, Field(description="e.g. Q3")]) -> dict[str, object]:
        self.queries += 1
        return {"period": period, "amount": 1_250_000}


def scripted_model(prompt: Prompt) -> AssistantMessage | str:
    """Plays the model: asks for both tools first, then answers from their results."""
    last = prompt.messages[-1]
    if not isinstance(last, ToolResponseMessage):
        return AssistantMessage(
            None,
            tool_calls=[
                tool_call("get_weather", {"city": "Beijing"}),
                tool_call("query_sales", {"period": "Q3"}),
            ],
        )
    weather, sales = (json.loads(r.response_data) for r in last.responses)
    return (
        f"{weather['city']} is {weather['condition']} at {weather['celsius']}°C; "
        f"{sales['period']} sales were {sales['amount']:,}."
    )


def main() -> None:
    sales = SalesTools()
    model = ScriptedChatModel(scripted_model)
    client = ChatClient.builder(model).default_tools(weather_tool, sales).build()

    answer = client.prompt("How is the weather in Beijing today? Also, Q3 sales?").call().content()
    print("answer:", answer)
    print("streamed:", "".join(client.prompt("Once more, streaming.").stream().content()))
    print(f"model rounds: {model.calls}, sales queries: {sales.queries}")
    print("what the model saw in the second round:")
    for message in model.prompts[1].messages:
        print(f"   {message.role:>9}: {message.model_dump_json(exclude_defaults=True)}")


if __name__ == "__main__":
    main()
