"""The keyword rule the sentence-form classifier replaced, on crates/aria-api/data/requests.tsv.

Run from the repository root: python3 bench/requests/keyword_baseline.py
"""
import re
# The keyword rule this replaces (aria-core tool_select::asks_for_change before this change).
VERBS={"add","append","change","create","delete","edit","fix","implement","insert","modify","move","patch","refactor","remove","rename","replace","rewrite","save","update","write"}
rows=[l.rstrip("\n").split("\t",2) for l in open("crates/aria-api/data/requests.tsv") if not l.startswith("#") and l.strip()]
for part in ["dev","held"]:
    r=[(lab=="change",t) for lab,p,t in rows if p==part]
    ok=sum((any(w.lower() in VERBS for w in re.split(r"[^A-Za-z0-9]+",t)))==c for c,t in r)
    qs=[(c,t) for c,t in r if not c]
    fq=sum(any(w.lower() in VERBS for w in re.split(r"[^A-Za-z0-9]+",t)) for c,t in qs)
    print(f"old keyword rule {part}: {ok}/{len(r)} = {100*ok/len(r):.1f} %; questions taken for changes: {fq}/{len(qs)}")
