#!/usr/bin/env python3
"""make_text.py — the mixed-script held-out text of the tokenizer parity tests (issue 31).

Built from the Unicode CLDR annotations (emoji names in 147 locales) of Debian's
unicode-cldr-core package (Unicode License v3, permissive): lines of names in many scripts,
with their emoji, digits, punctuation, whitespace runs and some code, so every pre-tokenizer
branch is exercised. Deterministic: the same package gives the same file.

    apt-get download unicode-cldr-core && dpkg-deb -x unicode-cldr-core_*.deb cldr
    python3 make_text.py cldr/usr/share/unicode/cldr/common/annotations > ../data/tokparity/text.txt
"""
import random
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

LOCALES = ["en", "de", "fr", "es", "pt", "it", "nl", "pl", "cs", "tr", "vi", "ru", "uk", "bg",
           "el", "he", "ar", "fa", "ur", "hi", "bn", "ta", "te", "th", "lo", "km", "my", "ka",
           "hy", "am", "ja", "ko", "zh", "zh_Hant", "yue", "mn", "si", "ml", "gu", "pa", "sw",
           "yo", "ig", "fi", "hu", "is", "ga", "cy"]
CODE = ["def f(x):\n    return x**2  # square", "for (int i = 0; i < n; i++) { s += a[i]; }",
        "if x != None and y >= 3: print(f'{x:>8}')", "SELECT id, name FROM t WHERE n > 42;",
        "const url = \"https://example.com/a?b=1&c=2\";", "a_b-c.d/e\\f|g~h^i`j@k#l$m%n"]


def main(root):
    rng = random.Random(31)
    lines = []
    for loc in LOCALES:
        f = Path(root) / f"{loc}.xml"
        if not f.exists():
            continue
        names = [(a.get("cp"), a.text) for a in ET.parse(f).getroot().iter("annotation")
                 if a.get("type") == "tts" and a.text]
        rng.shuffle(names)
        for i in range(0, min(len(names), 60), 6):
            parts = []
            for cp, text in names[i:i + 6]:
                r = rng.random()
                if r < 0.2:
                    parts.append(f"{cp}{text} {rng.randint(0, 10 ** rng.randint(1, 7))}")
                elif r < 0.3:
                    parts.append(f"{text},  {cp}\t{rng.choice(['!', '?', '...', '—', '(1)'])}")
                elif r < 0.4:
                    parts.append(f"{text.upper()}'s {cp}{cp} {rng.randint(0, 99)}.{rng.randint(0, 9)}%")
                else:
                    parts.append(f"{cp} {text}")
            line = " ".join(parts)
            if rng.random() < 0.15:
                line += "   " + rng.choice(CODE).replace("\n", " ")
            lines.append(line)
    for c in CODE:
        lines.append(c.replace("\n", " "))
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
