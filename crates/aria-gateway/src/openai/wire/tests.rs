use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn parse(body: serde_json::Value) -> Result<CompletionRequest, OpenAiError> {
    CompletionRequest::parse(body.to_string().as_bytes())
}

#[test]
fn bad_requests_say_which_parameter() {
    let e = CompletionRequest::parse(b"{not json").unwrap_err();
    assert_eq!((e.status.as_u16(), e.code.as_str(), e.param), (400, "invalid_json", None));
    let e = parse(json!({"model": "aria"})).unwrap_err();
    assert_eq!(
        (e.code.as_str(), e.param.as_deref()),
        ("missing_required_parameter", Some("messages"))
    );
    let e = parse(json!({"messages": []})).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("messages"));
    let e = parse(json!({"messages": "hi"})).unwrap_err();
    assert_eq!(e.code, "invalid_type");
    // An array of the fields in order is not a request, though serde would read one from it.
    let e = parse(json!([null, [{"role": "user", "content": "x"}]])).unwrap_err();
    assert_eq!((e.status.as_u16(), e.code.as_str()), (400, "invalid_type"));
    let e = parse(json!({"messages": [{"role": "user", "content": "x"}], "n": 2})).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("n"));
    let ok = parse(json!({"messages": [{"role": "user", "content": "x"}], "top_p": 0.5,
                          "stream": true, "stream_options": {"include_usage": true}}))
    .unwrap();
    assert!(ok.stream() && ok.include_usage() && !ok.has_tools());
}

#[test]
fn openai_messages_become_aria_messages() {
    let raw = [
        json!({"role": "developer", "content": "Be brief."}),
        json!({"role": "user", "content": [{"type": "text", "text": "What is"},
                                          {"type": "text", "text": "the weather?"}]}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "rain"}),
    ];
    let converted = messages(&raw).unwrap();
    assert_eq!(
        converted,
        vec![
            Message::system("Be brief."),
            Message::user("What is\nthe weather?"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "weather".into(),
                    arguments: "{\"city\":\"Oslo\"}".into(),
                }],
            ),
            Message::tool_result("call_1", "rain"),
        ]
    );
    assert_eq!(last_user_text(&converted), Some("What is\nthe weather?"));
}

#[test]
fn unsupported_messages_are_refused_with_their_place() {
    let image = [json!({"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]})];
    let e = messages(&image).unwrap_err();
    assert_eq!(
        (e.code.as_str(), e.param.as_deref()),
        ("unsupported_content", Some("messages[0].content[1]"))
    );
    let e =
        messages(&[json!({"role": "user"}), json!({"role": "tool", "content": "x"})]).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("messages[1].tool_call_id"));
    let e = messages(&[json!({"role": "function", "content": "x"})]).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("messages[0].role"));
}

#[test]
fn client_tools_become_tool_specs() {
    let raw = [
        json!({"type": "function", "function": {"name": "weather", "description": "Forecast",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
        json!({"type": "function", "function": {"name": "now"}}),
    ];
    let specs = tools(&raw).unwrap();
    assert_eq!(specs[0].name, "weather");
    assert_eq!(specs[0].parameters["properties"]["city"]["type"], "string");
    assert_eq!(specs[1].parameters, json!({"type": "object", "properties": {}}));
    let e = tools(&[json!({"type": "code_interpreter"})]).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("tools[0].type"));
}

#[test]
fn answers_have_openai_shapes() {
    let meta =
        Meta { id: "chatcmpl-1".into(), model: "aria".into(), created: 7, include_usage: true };
    let call = ToolCall { id: "call_9".into(), name: "weather".into(), arguments: "{}".into() };
    let used = Usage { input_tokens: 3, output_tokens: 2 };
    assert_eq!(
        completion(&meta, None, std::slice::from_ref(&call), "tool_calls", used),
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 7, "model": "aria",
            "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": null, "refusal": null,
                                     "tool_calls": [{"id": "call_9", "type": "function",
                                         "function": {"name": "weather", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        })
    );
    let [head, args] = tool_call_chunks(&meta, 1, &call);
    assert_eq!(
        head["choices"][0]["delta"],
        json!({"tool_calls": [{"index": 1, "id": "call_9", "type": "function",
                               "function": {"name": "weather", "arguments": ""}}]})
    );
    assert_eq!(
        args["choices"][0]["delta"],
        json!({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]})
    );
    assert_eq!(head["usage"], serde_json::Value::Null);
    let last = usage_chunk(&meta, used);
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["total_tokens"], 5);
}
