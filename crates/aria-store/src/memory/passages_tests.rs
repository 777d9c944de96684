//! Memories of several passages: stored, searched, counted, replaced, and kept
//! apart from duplicate checks.

use super::tests::{M, add, store};
use super::*;
use crate::memory_search::{MemoryQuery, SearchMode};

#[test]
fn a_long_memory_is_found_by_any_of_its_passages_and_counted_once() {
    let store = store();
    let passages = vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
    let long = store
        .memory_insert(
            &NewMemory::new("a long text in three passages"),
            Some(Passages { model: M, vectors: &passages }),
            Writer::USER,
        )
        .unwrap();
    let short = add(&store, "a short one", Some(&[0.6, 0.8, 0.0]));
    let vector_search = |q: &[f32]| {
        let mut query = MemoryQuery::new("", Some(Embedding { model: M, vector: q }), 10);
        query.mode = SearchMode::Vector;
        let hits = store.memory_search(&query).unwrap();
        hits.into_iter().map(|h| (h.memory.id, h.similarity.unwrap())).collect::<Vec<_>>()
    };
    for residence in [crate::Residence::Ram, crate::Residence::Sqlite] {
        store.set_memory_vector_residence(residence);
        // The third passage matches exactly: the memory scores 1.0, once.
        assert_eq!(
            vector_search(&[0.0, 0.0, 2.0]),
            [(long.id.clone(), 1.0), (short.id.clone(), 0.0)]
        );
        let hits = vector_search(&[0.0, 1.0, 0.0]);
        assert_eq!(hits[0], (long.id.clone(), 1.0), "{residence:?}");
        assert_eq!(hits.len(), 2);
    }
    assert_eq!(store.memory_embedding_models().unwrap(), [(M.to_owned(), 2)]);
    let counts = store.memory_passage_counts(M, 0, 10).unwrap();
    let counts: Vec<(String, u64)> = counts.into_iter().map(|(_, id, _, n)| (id, n)).collect();
    assert_eq!(counts, [(long.id.clone(), 3), (short.id.clone(), 1)]);

    // Embedding again replaces every passage: the old third one no longer matches.
    let again = vec![(long.id.clone(), vec![vec![1.0, 0.0, 0.0]])];
    store.memory_put_embeddings(M, &again, Writer::USER).unwrap();
    assert_eq!(vector_search(&[0.0, 0.0, 1.0])[0].1, 0.0);
    assert_eq!(store.memory_passage_counts(M, 0, 10).unwrap()[0].3, 1);

    // A new text drops the vectors; new passages can come with it.
    let update = MemoryUpdate { content: Some("rewritten".into()), ..MemoryUpdate::default() };
    let two = [vec![0.0, 0.0, 1.0], vec![0.0, 1.0, 0.0]];
    store
        .memory_update(&long.id, &update, Some(Passages { model: M, vectors: &two }), Writer::USER)
        .unwrap();
    assert_eq!(vector_search(&[0.0, 0.0, 1.0])[0], (long.id.clone(), 1.0));
    assert_eq!(store.memory_passage_counts(M, 0, 10).unwrap()[0].3, 2);
    store.memory_update(&long.id, &update_text("again"), None, Writer::USER).unwrap();
    assert_eq!(store.memory_passage_counts(M, 0, 10).unwrap()[0].3, 0);
    assert_eq!(vector_search(&[0.0, 0.0, 1.0]), [(short.id.clone(), 0.0)]);
    // Paging goes on after the last rid seen.
    let after = store.memory_passage_counts(M, 0, 1).unwrap()[0].0;
    let rest = store.memory_passage_counts(M, after, 10).unwrap();
    assert_eq!(rest.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(), [short.id.as_str()]);
}

#[test]
fn passages_of_different_lengths_or_zero_are_refused_and_nothing_is_stored() {
    let store = store();
    for bad in [vec![vec![1.0, 0.0], vec![1.0, 0.0, 0.0]], vec![vec![1.0, 0.0], vec![0.0, 0.0]]] {
        let err = store
            .memory_insert(
                &NewMemory::new("two passages"),
                Some(Passages { model: M, vectors: &bad }),
                Writer::USER,
            )
            .unwrap_err();
        assert!(matches!(err, StoreError::InvalidMemory(_)), "{err}");
    }
    assert_eq!(store.memory_counts().unwrap(), (0, 0, 0));
}

fn update_text(text: &str) -> MemoryUpdate {
    MemoryUpdate { content: Some(text.into()), ..MemoryUpdate::default() }
}

#[test]
fn a_short_text_close_to_one_passage_of_a_document_is_not_its_duplicate() {
    let store = store();
    let passages = [vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]];
    let doc = store
        .memory_insert(
            &NewMemory::new("a long document in two passages"),
            Some(Passages { model: M, vectors: &passages }),
            Writer::USER,
        )
        .unwrap();
    let q = Embedding { model: M, vector: &[0.0, 1.0, 0.0] };
    assert_eq!(store.memory_find_duplicate("its second passage", Some(q), 0.9).unwrap(), None);
    // A memory of one passage just as close is one; the document itself, word for word, too.
    let note = add(&store, "a note", Some(&[0.0, 0.99, 0.1]));
    let dup = store.memory_find_duplicate("its second passage", Some(q), 0.9).unwrap().unwrap();
    assert_eq!(dup.memory.id, note.id);
    let same = store.memory_find_duplicate(&doc.content, Some(q), 0.9).unwrap().unwrap();
    assert_eq!((same.memory.id, same.same_text), (doc.id, true));
}
