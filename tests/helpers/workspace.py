"""Folders of real repositories for the workspace tests, and what each repository's git
state is (status, HEAD, index bytes, refs outside turnback's, stash), to compare."""

from __future__ import annotations

from pathlib import Path

from .files import write
from .git import git, make_repo


def repo_git_state(repo: Path) -> dict[str, object]:
    """Everything of a repository turnback must never change, as the git CLI sees it."""
    git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    index = git_dir / "index"
    return {
        # --no-optional-locks: git status would otherwise refresh (rewrite) the index itself
        "status": git(repo, "--no-optional-locks", "status", "--porcelain", "-uall"),
        "head": git(repo, "rev-parse", "HEAD", check=False).strip(),
        "headRef": git(repo, "symbolic-ref", "-q", "HEAD", check=False).strip(),
        "index": index.read_bytes() if index.exists() else None,
        "refs": "\n".join(
            line
            for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
            if not line.startswith("refs/turnback/")
        ),
        "stash": git(repo, "stash", "list"),
        "config": (git_dir / "config").read_bytes() if (git_dir / "config").exists() else None,
    }


def two_repo_folder(root: Path) -> Path:
    """A plain folder holding `api/` and `web/` (each a repository) and a loose notes.md."""
    root.mkdir(parents=True)
    make_repo(root / "api", {"main.py": "api v1\n", "lib/util.py": "util v1\n"})
    make_repo(root / "web", {"index.js": "web v1\n", ".gitignore": "*.log\n"})
    write(root, "notes.md", "notes v1\n")
    return root


def agent_edits(ws: Path) -> None:
    """A turn reaching into both repositories and the loose files."""
    write(ws, "api/main.py", "api v2\n")
    (ws / "api/lib/util.py").unlink()
    write(ws, "web/new.js", "created by the agent\n")
    write(ws, "notes.md", "notes v2\n")
