// The turn diff: VS Code's diff editor (one file) or multi-file changes editor (a whole turn),
// fed by a read-only content provider whose documents are one side of one file of a turn,
// served by `snapshot/fileContent`.
import { EventEmitter, TextDocumentContentProvider, Uri } from 'vscode';
import { CONTENT_SCHEME } from '../common/constants';
import { traceError } from '../common/logging';
import type { DiffParams, FileDiff, Side, Target, Turn, TurnRef } from '../common/protocol';
import { executeCommand, getTextDocuments, showInformationMessage } from '../common/vscodeapi';
import { absolutePath, uriSafe } from '../common/workTree';
import type { TurnbackApi } from './api';
import { targetFromParams, TurnbackContext } from './context';
import { newestActive, turnTitle } from './turns';

/** What a `turnback:` URI names. */
export interface ContentRef extends Target {
    turn: TurnRef;
    path: string;
    side: Side;
}

/** `turnback:/src/app.py?{...}`: the path gives the editor its title and language. */
export function contentUri(ref: ContentRef): Uri {
    const query: Record<string, unknown> = { turn: ref.turn, side: ref.side, path: ref.path };
    if (ref.workspace !== undefined) {
        query.workspace = ref.workspace;
    }
    if (ref.session !== undefined) {
        query.session = ref.session;
    }
    return Uri.from({ scheme: CONTENT_SCHEME, path: `/${uriSafe(ref.path)}`, query: JSON.stringify(query) });
}

export function parseContentUri(uri: Uri): ContentRef {
    const query = JSON.parse(uri.query) as Record<string, unknown>;
    const ref: ContentRef = {
        turn: query.turn as TurnRef,
        path: typeof query.path === 'string' ? query.path : uri.path.replace(/^\//, ''),
        side: query.side === 'before' ? 'before' : 'after',
    };
    if (typeof query.workspace === 'string') {
        ref.workspace = query.workspace;
    }
    if (typeof query.session === 'string') {
        ref.session = query.session;
    }
    return ref;
}

export class TurnContentProvider implements TextDocumentContentProvider {
    private readonly changed = new EventEmitter<Uri>();
    private readonly served = new Map<string, Uri>();
    readonly onDidChange = this.changed.event;

    constructor(private readonly api: TurnbackApi) {}

    async provideTextDocumentContent(uri: Uri): Promise<string> {
        this.served.set(uri.toString(), uri);
        let ref: ContentRef;
        try {
            ref = parseContentUri(uri);
        } catch {
            return `turnback: not a turnback document: ${uri.toString()}`;
        }
        try {
            const content = await this.api.fileContent(ref);
            if (content.tooLarge) {
                return `(turnback: ${content.path} is too large to show here: ${content.size ?? '?'} bytes)`;
            }
            if (content.binary) {
                return `(turnback: ${content.path} is a binary file)`;
            }
            return content.text;
        } catch (error) {
            traceError(`fileContent ${uri.toString()}:`, error);
            return `(turnback: could not read ${ref.path} ${ref.side} turn ${ref.turn}: ${(error as Error).message ?? error})`;
        }
    }

    /** The timeline changed: open documents ask again (an unsealed turn's "after" moves). */
    refresh(): void {
        const open = new Set(getTextDocuments().map((d) => d.uri.toString()));
        for (const [key, uri] of [...this.served]) {
            if (open.has(key)) {
                this.changed.fire(uri);
            } else {
                this.served.delete(key); // closed: VS Code asks again if it is reopened
            }
        }
    }

    dispose(): void {
        this.changed.dispose();
    }
}

export function diffTitle(turn: Turn, file?: Pick<FileDiff, 'path'>): string {
    const which = `turn ${turn.turn}: ${turnTitle(turn)}`;
    return file ? `${file.path} (${which})` : `Agent ${which}`;
}

/** [label, before, after] for the multi-file changes editor (`vscode.changes`). */
export function changeResources(
    target: Target,
    turn: Turn,
    files: readonly FileDiff[],
    root: string | undefined,
): [Uri, Uri | undefined, Uri | undefined][] {
    const ref: Target = { ...target, session: turn.session };
    return files.map((file) => {
        const label = root ? Uri.file(absolutePath(root, uriSafe(file.path))) : contentUri({ ...ref, turn: turn.id, path: file.path, side: 'after' });
        // No side for a file the turn created or deleted: VS Code then shows it as added/deleted.
        const before = file.status === 'added' ? undefined : contentUri({ ...ref, turn: turn.id, path: file.oldPath ?? file.path, side: 'before' });
        const after = file.status === 'deleted' ? undefined : contentUri({ ...ref, turn: turn.id, path: file.path, side: 'after' });
        return [label, before, after];
    });
}

/**
 * Opens what a turn changed: `params` are `snapshot/diff` params (turn, path, workspace,
 * session), as a code lens's `turnback.showDiff` carries them. Without a turn: the newest
 * active turn, else the newest one.
 */
export async function showTurnDiff(ctx: TurnbackContext, params: DiffParams = {}): Promise<void> {
    const target = targetFromParams(params, ctx.target());
    let turnRef: TurnRef | undefined = params.turn;
    if (turnRef === undefined) {
        const list = await ctx.api.list(target);
        const turn = newestActive(list.turns) ?? list.turns[0];
        if (!turn) {
            void showInformationMessage('turnback: no turns yet. Capture a snapshot before an agent turn.');
            return;
        }
        turnRef = turn.id;
        target.session = turn.session;
    }
    const result = await ctx.api.diff({ ...target, turn: turnRef, path: params.path, context: 0 });
    const turn = result.turn;
    if (!result.files.length) {
        void showInformationMessage(`turnback: ${diffTitle(turn)} changed no files${params.path ? ` under ${params.path}` : ''}.`);
        return;
    }
    const root = ctx.rootFor(target);
    const resources = changeResources(target, turn, result.files, root);
    if (resources.length === 1) {
        // vscode.diff needs both sides: an absent one is served as an empty document.
        const file = result.files[0];
        const ref: Target = { ...target, session: turn.session };
        const before = contentUri({ ...ref, turn: turn.id, path: file.oldPath ?? file.path, side: 'before' });
        const after = contentUri({ ...ref, turn: turn.id, path: file.path, side: 'after' });
        await executeCommand('vscode.diff', before, after, diffTitle(turn, file), { preview: true });
    } else {
        await executeCommand('vscode.changes', diffTitle(turn), resources);
    }
}
