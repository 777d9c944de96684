use std::time::Duration;

use serde_json::{Value, json};

use super::*;

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn call(tg: &FakeTelegram, method: &str, body: Value) -> (u16, Value) {
    let url = format!("{}/bottok/{method}", tg.api_base());
    let response = client().post(url).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn updates_are_long_polled_and_an_offset_confirms_earlier_ones() {
    let tg = FakeTelegram::start("tok");
    let first = tg.push_message(5, 5, "hello");
    let (_, got) = call(&tg, "getUpdates", json!({"timeout": 0})).await;
    assert_eq!(got["result"][0]["update_id"], first);
    assert_eq!(got["result"][0]["message"]["text"], "hello");
    let (_, none) = call(&tg, "getUpdates", json!({"offset": first + 1, "timeout": 0})).await;
    assert_eq!(none["result"], json!([]));
    assert_eq!(tg.unconfirmed(), 0);
    let waiting = tokio::spawn({
        let url = format!("{}/bottok/getUpdates", tg.api_base());
        async move {
            let body = json!({"offset": first + 1, "timeout": 5});
            client().post(url).json(&body).send().await.unwrap().json::<Value>().await.unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tg.push_message(-9, 5, "in a group");
    let got = tokio::time::timeout(Duration::from_secs(2), waiting).await.unwrap().unwrap();
    assert_eq!(got["result"][0]["update_id"], second);
    assert_eq!(got["result"][0]["message"]["chat"]["type"], "group");
}

#[tokio::test]
async fn messages_are_kept_edited_and_checked_like_telegram() {
    let tg = FakeTelegram::start("tok");
    let (_, sent) = call(
        &tg,
        "sendMessage",
        json!({"chat_id": 5, "text": "<b>a</b> &amp; b", "parse_mode": "HTML"}),
    )
    .await;
    let id = sent["result"]["message_id"].as_i64().unwrap();
    assert_eq!(tg.text_of(5, id).as_deref(), Some("a & b"));
    let (status, same) =
        call(&tg, "editMessageText", json!({"chat_id": 5, "message_id": id, "text": "a & b"}))
            .await;
    assert_eq!(
        (status, same["description"].as_str().unwrap().contains("not modified")),
        (400, true)
    );
    call(&tg, "editMessageText", json!({"chat_id": 5, "message_id": id, "text": "a & b c"})).await;
    assert_eq!(tg.messages(5), [(id, "a & b c".to_owned())]);
    let (status, bad) =
        call(&tg, "sendMessage", json!({"chat_id": 5, "text": "1 < 2 & 3", "parse_mode": "HTML"}))
            .await;
    assert_eq!(status, 400);
    assert!(bad["description"].as_str().unwrap().contains("can't parse entities"), "{bad}");
    let (status, _) =
        call(&tg, "sendMessage", json!({"chat_id": 5, "text": "x".repeat(4097)})).await;
    assert_eq!(status, 400);
    let (status, _) =
        call(&tg, "sendMessage", json!({"chat_id": 5, "text": "é".repeat(4096)})).await;
    assert_eq!(status, 200);
    let wrong = client()
        .post(format!("{}/botnope/getMe", tg.api_base()))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
}

#[tokio::test]
async fn faults_are_played_in_order_for_their_method_only() {
    let tg = FakeTelegram::start("tok");
    tg.fail_next("sendMessage", Fault::TooManyRequests { retry_after: 3 }, 1);
    tg.fail_next("sendMessage", Fault::Status(502), 1);
    tg.fail_next("sendMessage", Fault::Drop { delivered: true }, 1);
    let (_, me) = call(&tg, "getMe", json!({})).await;
    assert_eq!(me["result"]["id"], BOT_ID);
    let (status, limited) = call(&tg, "sendMessage", json!({"chat_id": 1, "text": "a"})).await;
    assert_eq!((status, limited["parameters"]["retry_after"].as_u64()), (429, Some(3)));
    let (status, _) = call(&tg, "sendMessage", json!({"chat_id": 1, "text": "a"})).await;
    assert_eq!(status, 502);
    let url = format!("{}/bottok/sendMessage", tg.api_base());
    let cut = client().post(url).json(&json!({"chat_id": 1, "text": "a"})).send().await;
    let body = match cut {
        Ok(r) => r.bytes().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(body.is_err(), "the connection is cut");
    assert_eq!(tg.messages(1).len(), 1, "delivered before the cut");
    let (status, _) = call(&tg, "sendMessage", json!({"chat_id": 1, "text": "b"})).await;
    assert_eq!(status, 200);
    assert_eq!(tg.calls("sendMessage").len(), 4);
    assert_eq!(tg.requests().iter().filter(|r| r.faulted).count(), 3);
}

#[tokio::test]
async fn files_are_found_with_get_file_and_downloaded() {
    let tg = FakeTelegram::start("tok");
    let id = tg.add_file(b"hello file");
    tg.push_file(5, 5, "document", &id, "notes.txt", Some("see this"));
    let (_, got) = call(&tg, "getUpdates", json!({})).await;
    assert_eq!(got["result"][0]["message"]["document"]["file_name"], "notes.txt");
    assert_eq!(got["result"][0]["message"]["caption"], "see this");
    let (_, file) = call(&tg, "getFile", json!({"file_id": id})).await;
    let path = file["result"]["file_path"].as_str().unwrap();
    let url = format!("{}/file/bottok/{path}", tg.api_base());
    let bytes = client().get(url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(&bytes[..], b"hello file");
    let (status, _) = call(&tg, "getFile", json!({"file_id": "nope"})).await;
    assert_eq!(status, 400);
}
