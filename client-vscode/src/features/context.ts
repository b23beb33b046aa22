// What the features share: the request API, which work tree a command is about, and a way
// to refresh everything that shows the timeline.
import { Uri, WorkspaceFolder } from 'vscode';
import type { Target } from '../common/protocol';
import { getActiveTextEditor, getWorkspaceFolder, getWorkspaceFolders } from '../common/vscodeapi';
import { findWorkTreeRoot } from '../common/workTree';
import type { TurnbackApi } from './api';

export interface TurnbackContext {
    readonly api: TurnbackApi;
    /** The target of palette commands: the active editor's folder, else the first folder. */
    target(): Target;
    /** The absolute folder the server's work-tree-relative paths start from. */
    rootFor(target: Target): string | undefined;
    /** Status bar, tree view and open diff documents show the timeline anew. */
    refresh(): void;
}

export function currentFolder(): WorkspaceFolder | undefined {
    const document = getActiveTextEditor()?.document;
    if (document && document.uri.scheme === 'file') {
        const folder = getWorkspaceFolder(document.uri);
        if (folder) {
            return folder;
        }
    }
    return getWorkspaceFolders()[0];
}

export function targetOf(folder: WorkspaceFolder | undefined): Target {
    return folder ? { workspace: folder.uri.toString() } : {};
}

export function rootFor(target: Target): string | undefined {
    const folder = target.workspace ? Uri.parse(target.workspace).fsPath : getWorkspaceFolders()[0]?.uri.fsPath;
    return folder ? findWorkTreeRoot(folder) : undefined;
}

/** The target of a server command's params (a lens carries workspace and session). */
export function targetFromParams(params: unknown, fallback: Target): Target {
    const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>;
    const out: Target = {};
    const workspace = typeof p.workspace === 'string' ? p.workspace : fallback.workspace;
    const session = typeof p.session === 'string' ? p.session : fallback.session;
    if (workspace !== undefined) {
        out.workspace = workspace;
    }
    if (session !== undefined) {
        out.session = session;
    }
    return out;
}
