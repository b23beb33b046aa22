// Where the server's work-tree-relative paths start. A folder inside a git work tree acts on
// that whole work tree (protocol.md), so paths are relative to the nearest ancestor holding
// `.git` (a directory, or a file in a linked worktree); a plain folder is its own root.
import * as fs from 'fs';
import * as path from 'path';

export function findWorkTreeRoot(folder: string, exists: (p: string) => boolean = fs.existsSync): string {
    let dir = path.resolve(folder);
    for (;;) {
        if (exists(path.join(dir, '.git'))) {
            return dir;
        }
        const parent = path.dirname(dir);
        if (parent === dir) {
            return path.resolve(folder);
        }
        dir = parent;
    }
}

/**
 * A path a URI can carry. A file name that is not UTF-8 reaches us with lone surrogates
 * (protocol.md: PEP 383 escapes), which make VS Code's URI code throw; such a name only
 * labels things, so it shows U+FFFD where the foreign bytes are. Requests keep the exact path.
 */
export function uriSafe(p: string): string {
    return p.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** The absolute path of a work-tree-relative path (always written with "/"). */
export function absolutePath(root: string, relative: string): string {
    return path.join(root, ...relative.split('/'));
}
