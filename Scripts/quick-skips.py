#!/usr/bin/env python3
"""Prints the `swift test --skip` pattern of Scripts/test --quick: every suite whose @Suite carries
one of TestSupport's tags .process, .media, .postgres or .browser (read from the test sources; test
identifiers are `<module>.<type>/<test>`)."""
import glob, os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
suite = re.compile(r"@Suite(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))?\s*(?:\n\s*)*(?:public |final |private |fileprivate )*(?:struct|class|enum|actor)\s+(\w+)")
needs = re.compile(r"\.(process|media|postgres|browser)\b")
skipped = []
for path in sorted(glob.glob(os.path.join(root, "Tests", "*Tests", "*.swift"))):
    module = os.path.basename(os.path.dirname(path))
    text = open(path, encoding="utf-8").read()
    for match in suite.finditer(text):
        traits = match.group(1) or ""
        if ".tags(" in traits and needs.search(traits[traits.index(".tags("):]):
            skipped.append(re.escape(f"{module}.{match.group(2)}") + "/")
if not skipped:
    sys.exit("quick-skips: no tagged suite found")
print("|".join(skipped))
