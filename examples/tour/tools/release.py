# Scripts the tour runs as commands, not a package to import.
# ruff: noqa: INP001
"""release: bump the version and add a changelog entry.

Asks ``bump`` (select: patch, minor or major) and ``headline`` (text: the
changelog entry's first line), then writes ``VERSION`` and ``CHANGELOG.md``.
"""

from __future__ import annotations

from protocol import ask, fail, read_request, succeed, workspace_path

BUMPS = [
    {"value": "patch", "description": "bug fixes only"},
    {"value": "minor", "description": "new features, nothing breaks"},
    {"value": "major", "description": "breaking changes"},
]

answers = read_request()["answers"]
version_file = workspace_path("VERSION")
try:
    major, minor, patch = (int(part) for part in version_file.read_text().strip().split("."))
except (OSError, ValueError):
    fail("VERSION does not hold a version like 1.4.2")
if "bump" not in answers:
    ask(
        "bump",
        f"The version is {major}.{minor}.{patch}. Which part should the release bump?",
        {"type": "select", "options": BUMPS},
        default="patch",
    )
if "headline" not in answers:
    ask(
        "headline",
        "The changelog headline for this release?",
        {"type": "text"},
        default="Small fixes",
    )
bump = answers["bump"]
if bump == "major":
    major, minor, patch = major + 1, 0, 0
elif bump == "minor":
    minor, patch = minor + 1, 0
else:
    patch += 1
version = f"{major}.{minor}.{patch}"
version_file.write_text(version + "\n")
changelog = workspace_path("CHANGELOG.md")
old = changelog.read_text(encoding="utf-8") if changelog.exists() else "# Changelog\n"
title, _, rest = old.partition("\n")
changelog.write_text(
    f"{title}\n\n## {version}\n\n- {answers['headline']}\n{rest}", encoding="utf-8"
)
succeed(f"Released {version} ({bump} bump): {answers['headline']}")
