"""End-to-end tests of ARIA's OpenAI-compatible endpoint with the official `openai` package.

A real `aria serve` runs against the scripted OpenAI-compatible model (`fake_openai.py`) and a
throwaway git repository as its root; each test talks to it the way any OpenAI client would
(`base_url=http://127.0.0.1:PORT/v1`, the API token as the key) and then checks what really
happened: the files on disk, the daemon's own API, and what ARIA sent to the model.

Run: `python3 -m pytest tests/e2e/test_openai_client.py -q` (after `cargo build -p aria-cli`).
Needs `pip install openai pytest`. `ARIA_BIN` overrides the binary.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aria_daemon import AriaDaemon, needs_aria  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

TOKEN = "e2e-openai-" + os.urandom(8).hex()

pytestmark = needs_aria


# The daemon's repository: the tests must not see keep-me.txt deleted.
FILES = {"keep-me.txt": "must survive\n", "notes.txt": "notes\n"}


@pytest.fixture(scope="module")
def model():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def daemon(model, tmp_path_factory):
    # `raw` sends what the SDK would not; `get` reads the daemon's own API.
    d = AriaDaemon(tmp_path_factory.mktemp("aria-openai"), model, token=TOKEN, files=FILES).start()
    yield d
    d.stop()


@pytest.fixture
def client(daemon):
    # No retries: a retried request would hide what the first answer was.
    return openai.OpenAI(base_url=daemon.url + "/v1", api_key=TOKEN, max_retries=0, timeout=60)


def said_by_user(request: dict) -> list[str]:
    return [str(m.get("content")) for m in request.get("messages", []) if m.get("role") == "user"]


# -----------------------------------------------------------------------------------------------


def test_models_list_names_the_agent_and_the_configured_model(client):
    ids = [m.id for m in client.models.list()]
    assert ids[0] == "aria", ids
    assert "openai/scripted" in ids, ids


def test_a_completion_runs_the_agent_on_the_last_user_message(client, daemon, model):
    model.set_script(["Paris is the capital of France."])
    raw = client.chat.completions.with_raw_response.create(
        model="aria",
        messages=[{"role": "system", "content": "Client-side system prompt."},
                  {"role": "user", "content": "An older question"},
                  {"role": "assistant", "content": "An older answer"},
                  {"role": "user", "content": "What is the capital of France?"}])
    completion = raw.parse()
    assert completion.object == "chat.completion"
    assert completion.model == "aria"
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Paris is the capital of France."
    assert choice.finish_reason == "stop"
    usage = completion.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    session_id = raw.headers["x-aria-session-id"]
    conversation_id = raw.headers["x-aria-conversation-id"]
    assert completion.id == f"chatcmpl-{session_id}"

    # ARIA kept the task and its answer, not the client's history.
    conversation = daemon.get(f"/conversations/{conversation_id}")
    stored = [(m["role"], m["content"]) for m in conversation["messages"]]
    assert stored == [("user", "What is the capital of France?"),
                      ("assistant", "Paris is the capital of France.")], stored
    assert [s["id"] for s in conversation["sessions"]] == [session_id]
    # And the model was asked the task, with ARIA's own system prompt, not the client's.
    sent = model.requests[0]
    assert "What is the capital of France?" in said_by_user(sent)[-1]
    everything = json.dumps(sent["messages"])
    assert "An older question" not in everything and "Client-side system prompt" not in everything


def test_the_conversation_header_continues_a_conversation(client, model):
    model.set_script(["Noted.", "Your name is Ada."])
    first = client.chat.completions.with_raw_response.create(
        model="aria", messages=[{"role": "user", "content": "My name is Ada."}])
    conversation_id = first.headers["x-aria-conversation-id"]
    second = client.chat.completions.with_raw_response.create(
        model="aria", messages=[{"role": "user", "content": "What is my name?"}],
        extra_headers={"X-Aria-Conversation": conversation_id})
    assert second.headers["x-aria-conversation-id"] == conversation_id
    assert second.parse().choices[0].message.content == "Your name is Ada."
    assert any("My name is Ada." in t for t in said_by_user(model.requests[1]))
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(
            model="aria", messages=[{"role": "user", "content": "Hi"}],
            extra_headers={"X-Aria-Conversation": "no-such-conversation"})
    assert missing.value.body["code"] == "conversation_not_found"


def test_a_named_agent_runs_with_its_own_tools_and_keeps_its_conversation(client, model):
    ids = [m.id for m in client.models.list()]
    assert {"aria:researcher", "aria:coder", "aria:companion"} <= set(ids), ids
    model.set_script(["I looked."])
    raw = client.chat.completions.with_raw_response.create(
        model="aria:researcher", messages=[{"role": "user", "content": "Look around."}])
    completion = raw.parse()
    assert completion.model == "aria:researcher"
    assert completion.choices[0].message.content == "I looked."
    sent = model.requests[0]
    offered = {t["function"]["name"] for t in sent.get("tools", [])}
    assert "file_read" in offered and "file_write" not in offered, offered
    system = sent["messages"][0]["content"]
    assert 'running as the agent "researcher"' in system, system
    # The conversation keeps its agent: continuing it as another is refused, nothing is sent.
    conversation_id = raw.headers["x-aria-conversation-id"]
    with pytest.raises(openai.BadRequestError) as other:
        client.chat.completions.create(
            model="aria", messages=[{"role": "user", "content": "Write a file."}],
            extra_headers={"X-Aria-Conversation": conversation_id})
    assert "bound to the agent researcher" in other.value.body["message"]
    assert len(model.requests) == 1


def test_a_named_agent_binds_an_empty_conversation_it_is_sent_to(client, daemon, model):
    _, empty = daemon.api("POST", "/conversations", {}, expect_status=201)
    model.set_script(["Looked."])
    client.chat.completions.create(
        model="aria:researcher", messages=[{"role": "user", "content": "Look."}],
        extra_headers={"X-Aria-Conversation": empty["id"]})
    assert daemon.get(f"/conversations/{empty['id']}")["agent"] == "researcher"
    offered = {t["function"]["name"] for t in model.requests[0].get("tools", [])}
    assert "file_write" not in offered, offered


def test_a_streamed_completion(client, model):
    answer = "Streaming, one small piece after another, until the end."
    model.set_script([{"text": answer, "chunk": 5}])
    stream = client.chat.completions.create(
        model="aria", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Say something long"}])
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == answer
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1, \
        "the answer came in one piece"


def test_an_irreversible_call_is_denied_and_the_answer_says_so(client, daemon, model):
    target = daemon.root / "keep-me.txt"
    model.set_script([{"tool_calls": [{"name": "shell_execute",
                                       "arguments": {"command": "rm keep-me.txt"}}]},
                      "I could not delete keep-me.txt: it was not approved."])
    completion = client.chat.completions.create(
        model="aria", messages=[{"role": "user", "content": "Delete keep-me.txt"}])
    content = completion.choices[0].message.content
    assert content.startswith("I could not delete keep-me.txt"), content
    assert "ARIA did not run 1 action that needs approval" in content, content
    assert "shell_execute" in content and "rm keep-me.txt" in content, content
    assert target.read_text() == "must survive\n"
    # Nobody was asked, and the model was told the call was refused.
    assert daemon.get("/approvals")["items"] == []
    told = [str(m.get("content")) for m in model.requests[1]["messages"] if m.get("role") == "tool"]
    assert told and any("refused" in t or "denied" in t or "did not approve" in t for t in told), told


def test_client_tools_come_back_as_tool_calls(client, model):
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Today's weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}]
    messages = [{"role": "system", "content": "Use the tools."},
                {"role": "user", "content": "What is the weather in Oslo?"}]
    model.set_script([{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
                      "It is raining in Oslo.",
                      {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Bergen"}}]}])
    completion = client.chat.completions.create(model="aria", messages=messages, tools=tools)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Oslo"}
    # The model got the client's messages and tools as they were, and no tool of ARIA's.
    sent = model.requests[0]
    assert sent["messages"] == messages
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]

    # The client runs the tool and sends the result back.
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "rain, 7 °C"}]
    answer = client.chat.completions.create(model="aria", messages=messages, tools=tools)
    assert answer.choices[0].message.content == "It is raining in Oslo."
    assert answer.choices[0].finish_reason == "stop"
    assert model.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": call.id,
                                                 "content": "rain, 7 °C"}

    # Streamed, the call comes as OpenAI's tool-call deltas.
    stream = client.chat.completions.create(model="aria", messages=messages[:2], tools=tools,
                                            stream=True)
    name, arguments, finish = "", "", None
    for chunk in stream:
        for delta_call in chunk.choices[0].delta.tool_calls or []:
            name += delta_call.function.name or ""
            arguments += delta_call.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert (name, json.loads(arguments), finish) == ("get_weather", {"city": "Bergen"}, "tool_calls")


def test_a_backend_model_passes_the_request_through(client, model):
    model.set_script(["Bonjour."])
    messages = [{"role": "system", "content": "Answer in French."},
                {"role": "user", "content": "Hello"}]
    completion = client.chat.completions.create(model="openai/scripted", messages=messages)
    assert completion.model == "openai/scripted"
    assert completion.choices[0].message.content == "Bonjour."
    sent = model.requests[0]
    assert sent["model"] == "scripted"
    assert sent["messages"] == messages
    assert not sent.get("tools")


def test_bad_requests_get_openai_errors(client, daemon):
    with pytest.raises(openai.NotFoundError) as named:
        client.chat.completions.create(model="aria:nosuch", messages=[{"role": "user", "content": "Hi"}])
    assert named.value.body["code"] == "model_not_found"
    assert "no agent `nosuch`" in named.value.body["message"]
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="nosuch/model", messages=[{"role": "user", "content": "Hi"}])
    assert unknown.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as empty:
        client.chat.completions.create(model="aria", messages=[])
    assert empty.value.body["param"] == "messages"

    bad_key = openai.OpenAI(base_url=daemon.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        bad_key.models.list()
    assert refused.value.body["code"] == "invalid_api_key"
    assert refused.value.body["type"] == "authentication_error"

    # What the SDK would not send: a body that is not JSON, and one without messages.
    for body, code in [(b'{"model": "aria", "messages": [', "invalid_json"),
                       (b'{"model": "aria"}', "missing_required_parameter")]:
        status, headers, raw = daemon.raw("POST", "/v1/chat/completions", body,
                                          {"Content-Type": "application/json"})
        error = json.loads(raw)["error"]
        assert status == 400, raw
        assert headers.get("Content-Type", "").startswith("application/json")
        assert (error["code"], error["type"]) == (code, "invalid_request_error"), error
        assert set(error) >= {"message", "type", "param", "code"}
