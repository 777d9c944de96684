use std::sync::Arc;

use aria_api::NoRedact;
use pretty_assertions::assert_eq;

use super::*;
use crate::memory_search::{MemoryFilter, MemoryQuery, SearchMode};

pub(super) const M: &str = "test:toy";

pub(super) fn store() -> Store {
    Store::open_in_memory(Arc::new(NoRedact)).unwrap()
}

pub(super) fn add(store: &Store, text: &str, vector: Option<&[f32]>) -> Memory {
    let vectors = vector.map(|v| vec![v.to_vec()]);
    let e = vectors.as_deref().map(|vectors| Passages { model: M, vectors });
    store.memory_insert(&NewMemory::new(text), e, Writer::USER).unwrap()
}

fn audit_kinds(store: &Store) -> Vec<String> {
    store.audit_list(None).unwrap().into_iter().map(|r| r.kind).collect()
}

fn ids(hits: &[crate::MemoryHit]) -> Vec<&str> {
    hits.iter().map(|h| h.memory.content.as_str()).collect()
}

#[test]
fn a_memory_round_trips_with_its_provenance_and_is_audited() {
    let store = store();
    let mut new = NewMemory::new("My favorite color is blue");
    new.kind = MemoryKind::Preference;
    new.categories = vec!["personal".into()];
    new.importance = 0.8;
    new.confidence = 0.9;
    new.provenance = Provenance {
        conversation_id: Some("c1".into()),
        message_ids: vec![3, 4],
        extracted_at: Some("2026-11-23T06:00:00.000Z".into()),
        extracted_by: Some("ollama:qwen3".into()),
    };
    let stored =
        store.memory_insert(&new, None, Writer { actor: "agent", session_id: None }).unwrap();
    let got = store.memory_get(&stored.id).unwrap().unwrap();
    assert_eq!(got, stored);
    assert_eq!(got.kind, MemoryKind::Preference);
    assert_eq!(got.categories, vec!["personal".to_owned()]);
    assert_eq!(got.provenance, new.provenance);
    assert_eq!(got.status, MemoryStatus::Active);
    assert_eq!(got.access_count, 0);
    let records = store.audit_list(None).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].kind, "memory.store");
    assert_eq!(records[0].actor, "agent");
    assert_eq!(records[0].payload["id"], stored.id.as_str());
    assert_eq!(records[0].payload["content"], "My favorite color is blue");
    assert_eq!(records[0].payload["provenance"]["message_ids"], serde_json::json!([3, 4]));
    assert!(store.verify(None).unwrap().is_ok());
}

#[test]
fn update_changes_fields_drops_stale_vectors_and_audits_the_difference() {
    let store = store();
    let m = add(&store, "I live in Paris", Some(&[1.0, 0.0]));
    assert_eq!(store.memory_missing_embeddings(M, 10).unwrap(), vec![]);
    let update = MemoryUpdate {
        content: Some("I live in Lyon".into()),
        importance: Some(0.9),
        ..MemoryUpdate::default()
    };
    let after = store.memory_update(&m.id, &update, None, Writer::USER).unwrap();
    assert_eq!(after.content, "I live in Lyon");
    assert_eq!(after.importance, 0.9);
    assert_eq!(after.created_at, m.created_at);
    // The old vector described Paris: it is gone, and reindex would pick the memory up.
    assert_eq!(
        store.memory_missing_embeddings(M, 10).unwrap(),
        vec![(m.id.clone(), "I live in Lyon".to_owned())]
    );
    let last = store.audit_list(Some(1)).unwrap().remove(0);
    assert_eq!(last.kind, "memory.update");
    assert_eq!(
        last.payload["changed"]["content"],
        serde_json::json!(["I live in Paris", "I live in Lyon"])
    );
    assert!(last.payload["changed"].get("kind").is_none(), "{}", last.payload);
    let lyon = store.memory_search(&MemoryQuery::new("lyon", None, 5)).unwrap();
    assert_eq!(ids(&lyon), vec!["I live in Lyon"]);
    assert!(store.memory_search(&MemoryQuery::new("paris", None, 5)).unwrap().is_empty());
}

#[test]
fn forgotten_memories_are_kept_out_of_every_search_but_still_readable() {
    let store = store();
    let keep = add(&store, "the cat is called Tom", Some(&[0.0, 1.0]));
    let gone = add(&store, "the dog is called Rex", Some(&[1.0, 0.0]));
    // Load the vector index first, so forgetting must update it in place.
    let q = Embedding { model: M, vector: &[1.0, 0.1] };
    assert_eq!(store.memory_search(&MemoryQuery::new("called", Some(q), 5)).unwrap().len(), 2);
    let forgotten = store.memory_forget(&gone.id, Writer::USER).unwrap();
    assert_eq!(forgotten.status, MemoryStatus::Deleted);
    assert_eq!(forgotten.content, "the dog is called Rex");
    let everything =
        MemoryFilter { statuses: MemoryStatus::ALL.to_vec(), ..MemoryFilter::default() };
    for mode in [SearchMode::Hybrid, SearchMode::Text, SearchMode::Vector] {
        let mut query = MemoryQuery::new("dog Rex called", Some(q), 5);
        query.mode = mode;
        query.filter = everything.clone();
        let hits = store.memory_search(&query).unwrap();
        assert!(hits.iter().all(|h| h.memory.id == keep.id), "{mode:?}: {:?}", ids(&hits));
    }
    assert_eq!(store.memory_get(&gone.id).unwrap().unwrap().status, MemoryStatus::Deleted);
    assert_eq!(store.memory_counts().unwrap(), (1, 0, 1));
    assert_eq!(audit_kinds(&store).last().map(String::as_str), Some("memory.forget"));
    // A forgotten memory does not need a vector.
    assert!(store.memory_missing_embeddings(M, 10).unwrap().is_empty());
}

#[test]
fn hybrid_ranks_a_memory_found_by_both_retrievers_first() {
    let store = store();
    // Only the words match: found by BM25 alone.
    add(&store, "quarterly budget spreadsheet budget budget", None);
    // Only the meaning matches: found by vectors alone (nearest to the query).
    add(&store, "money plan for the next three months", Some(&[1.0, 0.0, 0.0]));
    // Matches both, but is second in each list.
    add(&store, "the budget for next quarter", Some(&[0.9, 0.3, 0.0]));
    let q = Embedding { model: M, vector: &[1.0, 0.0, 0.0] };
    let mut query = MemoryQuery::new("budget", Some(q), 3);
    query.mode = SearchMode::Text;
    assert_eq!(
        ids(&store.memory_search(&query).unwrap())[0],
        "quarterly budget spreadsheet budget budget"
    );
    query.mode = SearchMode::Vector;
    assert_eq!(
        ids(&store.memory_search(&query).unwrap())[0],
        "money plan for the next three months"
    );
    query.mode = SearchMode::Hybrid;
    let hits = store.memory_search(&query).unwrap();
    assert_eq!(hits[0].memory.content, "the budget for next quarter");
    assert_eq!((hits[0].text_rank, hits[0].vector_rank), (Some(2), Some(2)));
    assert!(hits[0].score > hits[1].score);
    assert_eq!(hits.len(), 3);
}

#[test]
fn bm25_computed_ahead_gives_the_same_hits_and_is_not_reused_for_another_query() {
    let store = store();
    add(&store, "quarterly budget spreadsheet budget budget", None);
    add(&store, "money plan for the next three months", Some(&[1.0, 0.0, 0.0]));
    add(&store, "the budget for next quarter", Some(&[0.9, 0.3, 0.0]));
    add(&store, "a plan for the garden", Some(&[0.2, 0.9, 0.1]));
    let q = Embedding { model: M, vector: &[1.0, 0.0, 0.0] };
    for mode in [SearchMode::Hybrid, SearchMode::Text, SearchMode::Vector] {
        let mut query = MemoryQuery::new("budget plan", Some(q), 3);
        query.mode = mode;
        let ahead = store.memory_text_candidates(&query).unwrap();
        assert_eq!(
            store.memory_search_with_text(&query, ahead).unwrap(),
            store.memory_search(&query).unwrap(),
            "{mode:?}"
        );
    }
    // Candidates of another text, filter or depth are not taken for this query's.
    let mut query = MemoryQuery::new("budget", Some(q), 3);
    let other_text = store.memory_text_candidates(&MemoryQuery::new("garden", None, 3)).unwrap();
    let expected = store.memory_search(&query).unwrap();
    assert_eq!(store.memory_search_with_text(&query, other_text).unwrap(), expected);
    let mut narrower = query.clone();
    narrower.filter.kinds = vec![MemoryKind::Preference];
    let other_filter = store.memory_text_candidates(&narrower).unwrap();
    assert_eq!(store.memory_search_with_text(&query, other_filter).unwrap(), expected);
    // A memory forgotten between the BM25 half and the search is not returned.
    let ahead = store.memory_text_candidates(&query).unwrap();
    let first = expected[0].memory.id.clone();
    store.memory_forget(&first, Writer::USER).unwrap();
    let hits = store.memory_search_with_text(&query, ahead).unwrap();
    assert!(hits.iter().all(|h| h.memory.id != first), "{hits:?}");
    let expected = store.memory_search(&query).unwrap();
    let mut shallower = query.clone();
    shallower.candidates = 1;
    shallower.limit = 1;
    let other_depth = store.memory_text_candidates(&shallower).unwrap();
    query.limit = 3;
    assert_eq!(store.memory_search_with_text(&query, other_depth).unwrap(), expected);
}

#[test]
fn filters_on_status_kind_and_categories_apply_to_both_retrievers() {
    let store = store();
    let mut pref = NewMemory::new("likes green tea");
    pref.kind = MemoryKind::Preference;
    pref.categories = vec!["food".into()];
    let pref = store
        .memory_insert(&pref, Some(Passages { model: M, vectors: &[vec![1.0, 0.0]] }), Writer::USER)
        .unwrap();
    let fact = add(&store, "green tea has caffeine", Some(&[0.9, 0.1]));
    let archived = add(&store, "green tea was bought on monday", Some(&[0.8, 0.2]));
    let update = MemoryUpdate { status: Some(MemoryStatus::Archived), ..MemoryUpdate::default() };
    store.memory_update(&archived.id, &update, None, Writer::USER).unwrap();
    let q = Embedding { model: M, vector: &[1.0, 0.0] };
    for mode in [SearchMode::Text, SearchMode::Vector, SearchMode::Hybrid] {
        let search = |filter: MemoryFilter| green_tea_ids(&store, mode, q, filter);
        assert_eq!(
            search(MemoryFilter::default()),
            sorted(vec![pref.id.clone(), fact.id.clone()]),
            "{mode:?}"
        );
        let kinds = MemoryFilter { kinds: vec![MemoryKind::Preference], ..MemoryFilter::default() };
        assert_eq!(search(kinds), vec![pref.id.clone()], "{mode:?}");
        let cats =
            MemoryFilter { categories: vec!["food".into(), "x".into()], ..MemoryFilter::default() };
        assert_eq!(search(cats), vec![pref.id.clone()], "{mode:?}");
        let arch =
            MemoryFilter { statuses: vec![MemoryStatus::Archived], ..MemoryFilter::default() };
        assert_eq!(search(arch), vec![archived.id.clone()], "{mode:?}");
    }
}

/// The ids a search for "green tea" finds in `mode` under `filter`, sorted.
fn green_tea_ids(
    store: &Store,
    mode: SearchMode,
    q: Embedding<'_>,
    filter: MemoryFilter,
) -> Vec<String> {
    let mut query = MemoryQuery::new("green tea", Some(q), 10);
    query.mode = mode;
    query.filter = filter;
    sorted(store.memory_search(&query).unwrap().into_iter().map(|h| h.memory.id).collect())
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn a_category_and_an_excluded_category_prefix_apply_to_both_retrievers() {
    let store = store();
    let with = |text: &str, categories: &[&str], vector: &[f32]| {
        let mut new = NewMemory::new(text);
        new.categories = categories.iter().map(|c| (*c).to_owned()).collect();
        let vectors = [vector.to_vec()];
        store
            .memory_insert(&new, Some(Passages { model: M, vectors: &vectors }), Writer::USER)
            .unwrap()
            .id
    };
    let poet = with("the poet likes green tea", &["agent:poet"], &[1.0, 0.0]);
    let plain = with("green tea is in the kitchen", &[], &[0.9, 0.1]);
    let profile = with("the user drinks green tea", &["profile"], &[0.8, 0.2]);
    let q = Embedding { model: M, vector: &[1.0, 0.0] };
    for mode in [SearchMode::Text, SearchMode::Vector, SearchMode::Hybrid] {
        let search = |filter: MemoryFilter| green_tea_ids(&store, mode, q, filter);
        let own = MemoryFilter { categories: vec!["agent:poet".into()], ..MemoryFilter::default() };
        assert_eq!(search(own), vec![poet.clone()], "{mode:?}");
        let shared = MemoryFilter {
            without_category_prefix: Some("agent:".into()),
            ..MemoryFilter::default()
        };
        assert_eq!(search(shared), sorted(vec![plain.clone(), profile.clone()]), "{mode:?}");
        // The prefix is literal: `%` and `_` are no wildcards.
        let literal = MemoryFilter {
            without_category_prefix: Some("agent_%".into()),
            ..MemoryFilter::default()
        };
        assert_eq!(
            search(literal),
            sorted(vec![poet.clone(), plain.clone(), profile.clone()]),
            "{mode:?}"
        );
    }
}

#[test]
fn a_duplicate_is_looked_for_only_among_the_memories_the_filter_keeps() {
    let store = store();
    let mut new = NewMemory::new("The poet likes green tea.");
    new.categories = vec!["agent:poet".into()];
    let poet = store
        .memory_insert(&new, Some(Passages { model: M, vectors: &[vec![1.0, 0.0]] }), Writer::USER)
        .unwrap();
    let live = vec![MemoryStatus::Active, MemoryStatus::Archived];
    let shared = MemoryFilter {
        statuses: live.clone(),
        without_category_prefix: Some("agent:".into()),
        ..MemoryFilter::default()
    };
    let own = MemoryFilter {
        statuses: live,
        categories: vec!["agent:poet".into()],
        ..MemoryFilter::default()
    };
    let near = Embedding { model: M, vector: &[0.99, 0.01] };
    for e in [None, Some(near)] {
        let text = if e.is_some() {
            "green tea is what the poet likes"
        } else {
            "the poet likes green TEA"
        };
        assert_eq!(store.memory_find_duplicate_in(text, e, 0.9, &shared).unwrap(), None);
        let found = store.memory_find_duplicate_in(text, e, 0.9, &own).unwrap().unwrap();
        assert_eq!(found.memory.id, poet.id);
        assert_eq!(store.memory_find_duplicate(text, e, 0.9).unwrap().unwrap().memory.id, poet.id);
    }
}

#[test]
fn vectors_written_after_a_search_of_an_empty_store_are_found() {
    // The first search loads an index with no vectors (and so no length); the vectors written
    // next must be searchable by this process without another process touching the store.
    let store = store();
    let q = Embedding { model: M, vector: &[1.0, 0.0] };
    let mut query = MemoryQuery::new("", Some(q), 10);
    query.mode = SearchMode::Vector;
    assert!(store.memory_search(&query).unwrap().is_empty());
    assert_eq!(store.memory_find_duplicate("tea", Some(q), 0.9).unwrap(), None);
    let m = add(&store, "green tea", Some(&[1.0, 0.0]));
    assert_eq!(ids(&store.memory_search(&query).unwrap()), vec!["green tea"]);
    let dup = store.memory_find_duplicate("tea, green", Some(q), 0.9).unwrap().unwrap();
    assert_eq!(dup.memory.id, m.id);
}

#[test]
fn vectors_of_two_models_are_never_mixed() {
    let store = store();
    let a = add(&store, "alpha", Some(&[1.0, 0.0]));
    let b = store
        .memory_insert(
            &NewMemory::new("beta"),
            Some(Passages { model: "other:big", vectors: &[vec![1.0, 0.0, 0.0]] }),
            Writer::USER,
        )
        .unwrap();
    let mut query =
        MemoryQuery::new("", Some(Embedding { model: "other:big", vector: &[1.0, 0.0, 0.0] }), 5);
    query.mode = SearchMode::Vector;
    let hits = store.memory_search(&query).unwrap();
    assert_eq!(hits.iter().map(|h| h.memory.id.clone()).collect::<Vec<_>>(), vec![b.id.clone()]);
    query.embedding = Some(Embedding { model: M, vector: &[1.0, 0.0] });
    let hits = store.memory_search(&query).unwrap();
    assert_eq!(hits.iter().map(|h| h.memory.id.clone()).collect::<Vec<_>>(), vec![a.id.clone()]);
    // A query of the wrong length for the model is an error naming the fix.
    query.embedding = Some(Embedding { model: M, vector: &[1.0, 0.0, 0.0] });
    let err = store.memory_search(&query).unwrap_err().to_string();
    assert!(err.contains("aria memories reindex"), "{err}");
    // So is storing one.
    let err = store
        .memory_insert(
            &NewMemory::new("gamma"),
            Some(Passages { model: M, vectors: &[vec![1.0; 3]] }),
            Writer::USER,
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidMemory(_)), "{err}");
    assert_eq!(
        store.memory_embedding_models().unwrap(),
        vec![("other:big".into(), 1), (M.into(), 1)]
    );
}

#[test]
fn reindex_work_list_is_resumable() {
    let store = store();
    for i in 0..5 {
        add(&store, &format!("note number {i}"), None);
    }
    let first = store.memory_missing_embeddings(M, 2).unwrap();
    assert_eq!(first.len(), 2);
    let vectors: Vec<(String, Vec<Vec<f32>>)> =
        first.iter().map(|(id, _)| (id.clone(), vec![vec![1.0, 2.0]])).collect();
    assert_eq!(store.memory_put_embeddings(M, &vectors, Writer::USER).unwrap(), 2);
    let rest = store.memory_missing_embeddings(M, 10).unwrap();
    assert_eq!(rest.len(), 3);
    assert!(rest.iter().all(|(id, _)| !first.iter().any(|(f, _)| f == id)));
    assert_eq!(audit_kinds(&store).last().map(String::as_str), Some("memory.embed"));
    // Vectors for an unknown id are skipped, not invented.
    assert_eq!(
        store
            .memory_put_embeddings(M, &[("nope".into(), vec![vec![1.0, 0.0]])], Writer::USER)
            .unwrap(),
        0
    );
}

#[test]
fn duplicates_are_found_by_normalised_text_or_by_similarity() {
    let store = store();
    let m = add(&store, "My favourite colour is blue.", Some(&[1.0, 0.0, 0.0]));
    let same =
        store.memory_find_duplicate("my favourite   COLOUR is blue", None, 0.9).unwrap().unwrap();
    assert!(same.same_text && same.memory.id == m.id && same.similarity == 1.0);
    let near = Embedding { model: M, vector: &[0.95, 0.05, 0.0] };
    let close = store
        .memory_find_duplicate("blue is the colour I like most", Some(near), 0.9)
        .unwrap()
        .unwrap();
    assert!(!close.same_text && close.memory.id == m.id && close.similarity > 0.99);
    let far = Embedding { model: M, vector: &[0.0, 1.0, 0.0] };
    assert_eq!(store.memory_find_duplicate("I own a bicycle", Some(far), 0.9).unwrap(), None);
    store.memory_forget(&m.id, Writer::USER).unwrap();
    assert_eq!(
        store.memory_find_duplicate("my favourite colour is blue", Some(near), 0.9).unwrap(),
        None
    );
}

#[test]
fn a_batch_is_all_or_nothing_and_ids_are_unique() {
    let store = store();
    let mut one = NewMemory::new("first");
    one.id = Some("doc-1".into());
    store.memory_insert(&one, None, Writer::USER).unwrap();
    let mut two = NewMemory::new("second");
    two.id = Some("doc-2".into());
    let batch = [two, one.clone()];
    let err = store.memory_insert_batch(&batch, None, |_| None, Writer::USER).unwrap_err();
    assert!(matches!(&err, StoreError::DuplicateMemoryId(id) if id == "doc-1"), "{err}");
    assert!(store.memory_get("doc-2").unwrap().is_none(), "the batch was rolled back");
    assert_eq!(store.audit_list(None).unwrap().len(), 1);
    let bad = NewMemory { importance: 2.0, ..NewMemory::new("x") };
    assert!(matches!(
        store.memory_insert(&bad, None, Writer::USER),
        Err(StoreError::InvalidMemory(_))
    ));
    assert!(matches!(
        store.memory_insert(&NewMemory::new("  "), None, Writer::USER),
        Err(StoreError::InvalidMemory(_))
    ));
}

#[test]
fn touch_counts_accesses_and_list_orders_by_update() {
    let store = store();
    let a = add(&store, "a", None);
    let b = add(&store, "b", None);
    store.memory_touch(&[a.id.clone(), a.id.clone(), b.id.clone()]).unwrap();
    store.memory_touch(std::slice::from_ref(&a.id)).unwrap();
    assert_eq!(store.memory_get(&a.id).unwrap().unwrap().access_count, 2);
    assert!(store.memory_get(&b.id).unwrap().unwrap().accessed_at.is_some());
    let listed: Vec<String> =
        store.memory_list(&[], 10, 0).unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(listed, vec![b.id.clone(), a.id.clone()]);
    assert_eq!(store.memory_list(&[MemoryStatus::Active], 1, 1).unwrap()[0].id, a.id);
}

#[test]
fn the_vector_index_follows_writes_made_by_another_store_on_the_same_file() {
    for residence in [crate::Residence::Ram, crate::Residence::Sqlite] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let one = Store::open(&path, Arc::new(NoRedact)).unwrap();
        one.set_memory_vector_residence(residence);
        let two = Store::open(&path, Arc::new(NoRedact)).unwrap();
        let x = add(&one, "x", Some(&[1.0, 0.0]));
        let q = Embedding { model: M, vector: &[0.0, 1.0] };
        let mut query = MemoryQuery::new("", Some(q), 1);
        query.mode = SearchMode::Vector;
        assert_eq!(one.memory_search(&query).unwrap()[0].memory.id, x.id);
        let y = add(&two, "y", Some(&[0.0, 1.0]));
        assert_eq!(one.memory_search(&query).unwrap()[0].memory.id, y.id, "one reloaded");
        two.memory_forget(&y.id, Writer::USER).unwrap();
        assert_eq!(one.memory_search(&query).unwrap()[0].memory.id, x.id, "one saw the forget");
        // Another process re-embeds x to match the query exactly.
        two.memory_put_embeddings(M, &[(x.id.clone(), vec![vec![0.0, 3.0]])], Writer::USER)
            .unwrap();
        let hit = one.memory_search(&query).unwrap().remove(0);
        assert_eq!((hit.memory.id.as_str(), hit.similarity), (x.id.as_str(), Some(1.0)));
        // And writes through `one` keep its own index current without a reload.
        let z = add(&one, "z", Some(&[-0.1, 1.0]));
        query.embedding = Some(Embedding { model: M, vector: &[-1.0, 1.0] });
        assert_eq!(one.memory_search(&query).unwrap()[0].memory.id, z.id, "{residence:?}");
    }
}

#[test]
fn normalize_text_ignores_case_punctuation_and_spacing() {
    assert_eq!(normalize_text("  Hello,   WORLD!! it's me "), "hello world it s me");
    assert_eq!(normalize_text("Ünïcode ÉTÉ"), "ünïcode été");
}

#[test]
fn text_search_fetches_past_rows_the_filter_drops() {
    let store = store();
    let archive = MemoryUpdate { status: Some(MemoryStatus::Archived), ..MemoryUpdate::default() };
    for i in 0..60 {
        let m = add(&store, &format!("tea tea tea note {i}"), None);
        store.memory_update(&m.id, &archive, None, Writer::USER).unwrap();
    }
    let active =
        add(&store, "a long note that mentions tea once among many other words here", None);
    let mut query = MemoryQuery::new("tea", None, 1);
    query.candidates = 1;
    query.mode = SearchMode::Text;
    let hits = store.memory_search(&query).unwrap();
    assert_eq!(hits.iter().map(|h| h.memory.id.clone()).collect::<Vec<_>>(), vec![active.id]);
}

fn add_batch(store: &Store, texts: &[String]) {
    let memories: Vec<NewMemory> = texts.iter().map(NewMemory::new).collect();
    store.memory_insert_batch(&memories, None, |_| None, Writer::USER).unwrap();
}

fn text_query(text: &str, limit: usize) -> MemoryQuery<'_> {
    let mut q = MemoryQuery::new(text, None, limit);
    q.mode = SearchMode::Text;
    q
}

#[test]
fn a_common_word_is_dropped_from_the_text_query_when_a_rarer_one_is_there() {
    use crate::memory_text::COMMON_WORD_ROWS;
    let store = store();
    // "weather" is in more rows than the common-word threshold, "umbrella" in three.
    let filler: Vec<String> =
        (0..=COMMON_WORD_ROWS).map(|i| format!("weather report number {i}")).collect();
    add_batch(&store, &filler);
    for text in ["umbrella left at the office", "bought an umbrella", "umbrella weather weather"] {
        add(&store, text, None);
    }
    let hits = store.memory_search(&text_query("weather umbrella", 50)).unwrap();
    let mut found = ids(&hits);
    found.sort_unstable();
    // Only the rare word's rows: none of the 2,001 rows that only say "weather".
    assert_eq!(
        found,
        vec!["bought an umbrella", "umbrella left at the office", "umbrella weather weather"]
    );
    // With a small store no word is common, so the same query also finds "weather" rows.
    let small = self::store();
    add_batch(&small, &filler[..10]);
    add(&small, "bought an umbrella", None);
    let hits = small.memory_search(&text_query("weather umbrella", 50)).unwrap();
    assert_eq!(hits.len(), 11);
    assert_eq!(hits[0].memory.content, "bought an umbrella");
}

#[test]
fn a_query_of_only_common_words_ranks_the_newest_matching_rows() {
    use crate::memory_text::COMMON_WORD_ROWS;
    let store = store();
    // The best BM25 match of all is the oldest row; later rows push it out of the newest
    // COMMON_WORD_ROWS matches, so it is not scored, while an equally good newer row is.
    add(&store, "weather weather weather oldest", None);
    let filler: Vec<String> =
        (0..COMMON_WORD_ROWS + 10).map(|i| format!("weather report number {i}")).collect();
    add_batch(&store, &filler);
    add(&store, "weather weather weather newest", None);
    let hits = store.memory_search(&text_query("weather", 5)).unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].memory.content, "weather weather weather newest");
    assert!(hits.iter().all(|h| h.memory.content != "weather weather weather oldest"));
}

/// Enough memories that the vector search rescores only some of them: both residences return
/// the same hits, and the one that reads the exact vectors back from SQLite follows updates,
/// forgets and new vectors made after it loaded.
#[test]
fn both_residences_agree_and_follow_writes() {
    let store = store();
    let mut seed = 17u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    };
    let memories: Vec<NewMemory> =
        (0..400).map(|i| NewMemory::new(format!("memory number {i}"))).collect();
    let vectors: Vec<Vec<Vec<f32>>> =
        (0..400).map(|_| vec![(0..8).map(|_| next()).collect()]).collect();
    let ids = store
        .memory_insert_batch(&memories, Some(M), |i| Some(vectors[i].as_slice()), Writer::USER)
        .unwrap();
    let q: Vec<f32> = (0..8).map(|_| next()).collect();
    let search = |store: &Store, residence: crate::Residence, vector: &[f32]| {
        store.set_memory_vector_residence(residence);
        let mut query = MemoryQuery::new("", Some(Embedding { model: M, vector }), 20);
        query.mode = SearchMode::Vector;
        store
            .memory_search(&query)
            .unwrap()
            .into_iter()
            .map(|h| (h.memory.id, h.similarity.unwrap()))
            .collect::<Vec<_>>()
    };
    let ram = search(&store, crate::Residence::Ram, &q);
    let sqlite = search(&store, crate::Residence::Sqlite, &q);
    assert_eq!(ram.len(), 20);
    assert_eq!(ram, sqlite);

    // With the SQLite residence loaded: the best hit forgotten, another one re-embedded to be
    // the query itself, a third one's text changed (its vector dropped).
    let best = ram[0].0.clone();
    store.memory_forget(&best, Writer::USER).unwrap();
    let moved = ids[7].clone();
    store.memory_put_embeddings(M, &[(moved.clone(), vec![q.clone()])], Writer::USER).unwrap();
    let changed = ram[1].0.clone();
    let update = MemoryUpdate { content: Some("new words".into()), ..MemoryUpdate::default() };
    store.memory_update(&changed, &update, None, Writer::USER).unwrap();
    let after = search(&store, crate::Residence::Sqlite, &q);
    assert_eq!(after[0], (moved.clone(), 1.0));
    assert!(after.iter().all(|(id, _)| *id != best && *id != changed), "{after:?}");
    assert_eq!(after, search(&store, crate::Residence::Ram, &q));
    // The closest stored vector to a far query is still the same in both.
    let far: Vec<f32> = q.iter().map(|x| -x).collect();
    assert_eq!(
        search(&store, crate::Residence::Sqlite, &far),
        search(&store, crate::Residence::Ram, &far)
    );
}

#[test]
fn private_memories_are_kept_out_of_searches_that_exclude_them_in_every_retriever() {
    for residence in [crate::Residence::Ram, crate::Residence::Sqlite] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let one = Store::open(&path, Arc::new(NoRedact)).unwrap();
        one.set_memory_vector_residence(residence);
        let two = Store::open(&path, Arc::new(NoRedact)).unwrap();
        let mut secret = NewMemory::new("the salary review is in march");
        secret.private = true;
        let secret = one
            .memory_insert(
                &secret,
                Some(Passages { model: M, vectors: &[vec![1.0, 0.0]] }),
                Writer::USER,
            )
            .unwrap();
        assert!(secret.private);
        let open = add(&one, "the review meeting is on friday", Some(&[0.9, 0.1]));
        let q = Embedding { model: M, vector: &[1.0, 0.0] };
        for mode in [SearchMode::Text, SearchMode::Vector, SearchMode::Hybrid] {
            let search = |store: &Store, private: bool| {
                let mut query = MemoryQuery::new("review", Some(q), 10);
                query.mode = mode;
                query.filter.private = private;
                let mut got: Vec<String> =
                    store.memory_search(&query).unwrap().into_iter().map(|h| h.memory.id).collect();
                got.sort();
                got
            };
            let mut both = vec![secret.id.clone(), open.id.clone()];
            both.sort();
            assert_eq!(search(&one, true), both, "{mode:?}");
            assert_eq!(search(&one, false), vec![open.id.clone()], "{mode:?}");
        }
        // Made public by another process: `one`'s vector index sees the change.
        let update = MemoryUpdate { private: Some(false), ..MemoryUpdate::default() };
        let after = two.memory_update(&secret.id, &update, None, Writer::USER).unwrap();
        assert!(!after.private);
        let last = two.audit_list(Some(1)).unwrap().remove(0);
        assert_eq!(last.payload["changed"]["private"], serde_json::json!([true, false]));
        let mut query = MemoryQuery::new("", Some(q), 10);
        query.mode = SearchMode::Vector;
        query.filter.private = false;
        assert_eq!(one.memory_search(&query).unwrap()[0].memory.id, secret.id, "{residence:?}");
        // And private again through `one` itself.
        let update = MemoryUpdate { private: Some(true), ..MemoryUpdate::default() };
        one.memory_update(&secret.id, &update, None, Writer::USER).unwrap();
        let ids: Vec<String> =
            one.memory_search(&query).unwrap().into_iter().map(|h| h.memory.id).collect();
        assert_eq!(ids, vec![open.id.clone()], "{residence:?}");
    }
}

#[test]
fn hybrid_search_feeds_the_top_memories_back_into_the_query_vector() {
    for residence in [crate::Residence::Ram, crate::Residence::Sqlite] {
        let store = store();
        store.set_memory_vector_residence(residence);
        // Every text has the query word once and the same length: BM25 cannot tell them apart,
        // so the order is the vectors'.
        let add_v = |name: &str, v: [f32; 4]| add(&store, &format!("alpha {name}"), Some(&v));
        for (i, name) in ["one", "two", "three"].iter().enumerate() {
            add_v(name, [0.9, 0.43 + 0.003 * i as f32, 0.0, 0.0]);
        }
        // Like the top three, but further from the query than `dis`.
        add_v("like", [0.55, 0.835, 0.0, 0.0]);
        add_v("dis", [0.6, 0.0, 0.8, 0.0]);
        for i in 0..9 {
            add_v(&format!("filler{i}"), [0.3, 0.0, 0.01 * i as f32, 0.95]);
        }
        let q = Embedding { model: M, vector: &[1.0, 0.0, 0.0, 0.0] };
        let mut query = MemoryQuery::new("alpha", Some(q), 14);
        query.mode = SearchMode::Vector;
        let top = |hits: &[crate::MemoryHit]| {
            let mut first: Vec<&str> = ids(hits)[..3].to_vec();
            first.sort_unstable();
            assert_eq!(first, ["alpha one", "alpha three", "alpha two"]);
            ids(hits)[3..5].join(",")
        };
        assert_eq!(top(&store.memory_search(&query).unwrap()), "alpha dis,alpha like");
        query.mode = SearchMode::Hybrid;
        let hits = store.memory_search(&query).unwrap();
        assert_eq!(top(&hits), "alpha like,alpha dis", "{residence:?}");
        // The similarity shown is still the one to the query itself.
        let like = hits.iter().find(|h| h.memory.content == "alpha like").unwrap();
        let cos = 0.55 / (0.55f32 * 0.55 + 0.835 * 0.835).sqrt();
        assert!((like.similarity.unwrap() - cos).abs() < 1e-4, "{:?}", like.similarity);
        assert_eq!(hits.len(), 14);
    }
}

#[test]
fn an_unconfirmed_memory_is_found_only_by_searches_that_allow_it_until_confirmed() {
    let store = store();
    let v = [1.0, 0.0, 0.0];
    let passages = [v.to_vec()];
    let new =
        NewMemory { unconfirmed: true, ..NewMemory::new("deploys start with the billing script") };
    let m = store
        .memory_insert(&new, Some(Passages { model: M, vectors: &passages }), Writer::USER)
        .unwrap();
    assert!(m.unconfirmed);
    let recall = |unconfirmed: bool, mode: SearchMode| {
        let mut q = MemoryQuery::new("billing", Some(Embedding { model: M, vector: &v }), 5);
        q.filter = MemoryFilter { unconfirmed, ..MemoryFilter::default() };
        q.mode = mode;
        store.memory_search(&q).unwrap().len()
    };
    for mode in [SearchMode::Hybrid, SearchMode::Text, SearchMode::Vector] {
        assert_eq!(recall(false, mode), 0, "{mode:?}: a prompt's search never sees it");
        assert_eq!(recall(true, mode), 1, "{mode:?}: the user's view does");
    }
    let confirmed = store
        .memory_update(
            &m.id,
            &MemoryUpdate { unconfirmed: Some(false), ..MemoryUpdate::default() },
            None,
            Writer::USER,
        )
        .unwrap();
    assert!(!confirmed.unconfirmed);
    for mode in [SearchMode::Hybrid, SearchMode::Text, SearchMode::Vector] {
        assert_eq!(recall(false, mode), 1, "{mode:?}: confirmed, it is recalled");
    }
    assert!(audit_kinds(&store).contains(&"memory.update".to_owned()));
}
