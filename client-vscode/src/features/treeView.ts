// The "Agent Turns" view: (workspace folders →) sessions → turns → files, with undo to here,
// redo to here and diff actions.
import * as path from 'path';
import {
    EventEmitter,
    ThemeIcon,
    TreeDataProvider,
    TreeItem,
    TreeItemCollapsibleState,
    Uri,
    WorkspaceFolder,
} from 'vscode';
import { Commands } from '../common/constants';
import { traceError } from '../common/logging';
import type { SessionInfo, Target, Turn, TurnFile } from '../common/protocol';
import { getWorkspaceFolders } from '../common/vscodeapi';
import { absolutePath, uriSafe } from '../common/workTree';
import { targetOf, TurnbackContext } from './context';
import { showTurnDiff } from './diffView';
import { restore } from './restore';
import { formatAge, plural, STATUS_LETTER, turnTitle } from './turns';

export interface FolderNode {
    kind: 'folder';
    folder: WorkspaceFolder;
    target: Target;
}

export interface SessionNode {
    kind: 'session';
    target: Target & { session: string };
    session: SessionInfo;
    /** The session requests default to (the one most recently captured into). */
    current: boolean;
}

export interface TurnNode {
    kind: 'turn';
    target: Target & { session: string };
    turn: Turn;
}

export interface FileNode {
    kind: 'file';
    target: Target & { session: string };
    turn: Turn;
    file: TurnFile;
    root?: string;
}

export interface InfoNode {
    kind: 'info';
    message: string;
}

export type TurnsNode = FolderNode | SessionNode | TurnNode | FileNode | InfoNode;

export class TurnsTreeProvider implements TreeDataProvider<TurnsNode> {
    private readonly changed = new EventEmitter<TurnsNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;

    constructor(private readonly ctx: TurnbackContext) {}

    refresh(): void {
        this.changed.fire(undefined);
    }

    async getChildren(node?: TurnsNode): Promise<TurnsNode[]> {
        if (!this.ctx.api.running) {
            return []; // the welcome view says the server is not running
        }
        try {
            if (!node) {
                const folders = getWorkspaceFolders();
                if (folders.length > 1) {
                    return folders.map((folder) => ({ kind: 'folder', folder, target: targetOf(folder) }));
                }
                return folders.length ? await this.sessions(targetOf(folders[0])) : [];
            }
            switch (node.kind) {
                case 'folder':
                    return await this.sessions(node.target);
                case 'session':
                    return await this.turns(node.target);
                case 'turn':
                    return this.files(node);
                default:
                    return [];
            }
        } catch (error) {
            traceError('Agent Turns view:', error);
            return [{ kind: 'info', message: `turnback: ${(error as Error).message ?? error}` }];
        }
    }

    private async sessions(target: Target): Promise<TurnsNode[]> {
        const list = await this.ctx.api.list({ ...target, limit: 1 });
        return list.sessions.map((session) => ({
            kind: 'session',
            target: { ...target, session: session.id },
            session,
            current: session.id === list.session,
        }));
    }

    private async turns(target: Target & { session: string }): Promise<TurnsNode[]> {
        const list = await this.ctx.api.list({ ...target, includeFiles: true });
        return list.turns.map((turn) => ({ kind: 'turn', target, turn }));
    }

    private files(node: TurnNode): TurnsNode[] {
        const root = this.ctx.rootFor(node.target);
        return (node.turn.files ?? []).map((file) => ({ kind: 'file', target: node.target, turn: node.turn, file, root }));
    }

    getTreeItem(node: TurnsNode): TreeItem {
        switch (node.kind) {
            case 'folder': {
                const item = new TreeItem(node.folder.name, TreeItemCollapsibleState.Expanded);
                item.iconPath = new ThemeIcon('root-folder');
                item.contextValue = 'folder';
                return item;
            }
            case 'session': {
                const item = new TreeItem(
                    node.session.id,
                    node.current ? TreeItemCollapsibleState.Expanded : TreeItemCollapsibleState.Collapsed,
                );
                item.description = [plural(node.session.turns, 'turn'), `updated ${formatAge(node.session.updatedAt)}`, node.current ? 'current' : '']
                    .filter(Boolean)
                    .join(' · ');
                item.iconPath = new ThemeIcon('layers');
                item.contextValue = 'session';
                return item;
            }
            case 'turn':
                return turnItem(node);
            case 'file':
                return fileItem(node);
            case 'info': {
                const item = new TreeItem(node.message, TreeItemCollapsibleState.None);
                item.iconPath = new ThemeIcon('warning');
                return item;
            }
        }
    }
}

export function turnItem(node: TurnNode): TreeItem {
    const { turn } = node;
    const files = turn.files?.length ?? 0;
    const item = new TreeItem(turnTitle(turn), files ? TreeItemCollapsibleState.Collapsed : TreeItemCollapsibleState.None);
    item.description = [`turn ${turn.turn}`, formatAge(turn.createdAt), turn.files ? plural(files, 'file') : '', turn.state === 'undone' ? 'undone' : '']
        .filter(Boolean)
        .join(' · ');
    item.tooltip = [
        `${turnTitle(turn)} (turn ${turn.turn}, session "${turn.session}")`,
        `Captured ${turn.createdAt}${turn.sealedAt ? `, finished ${turn.sealedAt}` : ''}`,
        `State: ${turn.state}${turn.sealed ? ', finished' : ''}`,
        turn.skipped.length ? `Not snapshotted: ${turn.skipped.map((s) => `${s.path} (${s.reason})`).join(', ')}` : '',
    ]
        .filter(Boolean)
        .join('\n');
    item.iconPath = new ThemeIcon(turn.state === 'active' ? 'git-commit' : 'discard');
    item.contextValue = turn.state === 'active' ? 'turn.active' : 'turn.undone';
    return item;
}

export function fileItem(node: FileNode): TreeItem {
    const { file } = node;
    const item = new TreeItem(path.posix.basename(file.path), TreeItemCollapsibleState.None);
    const dir = path.posix.dirname(file.path);
    item.description = [dir === '.' ? '' : dir, STATUS_LETTER[file.status], file.oldPath ? `← ${file.oldPath}` : '']
        .filter(Boolean)
        .join(' · ');
    item.tooltip = `${file.path} — ${file.status}${file.oldPath ? ` from ${file.oldPath}` : ''} in turn ${node.turn.turn}`;
    if (node.root) {
        item.resourceUri = Uri.file(absolutePath(node.root, uriSafe(file.path)));
    }
    item.contextValue = 'file';
    item.command = { command: Commands.diffFile, title: 'Show Diff', arguments: [node] };
    return item;
}

// ---- the view's commands ------------------------------------------------------------------

function isNode<K extends TurnsNode['kind']>(value: unknown, kind: K): value is Extract<TurnsNode, { kind: K }> {
    return typeof value === 'object' && value !== null && (value as TurnsNode).kind === kind;
}

/** Undo the turns from the newest down to this one (the server resolves the turn id). */
export async function undoToHere(ctx: TurnbackContext, node: unknown): Promise<void> {
    if (!isNode(node, 'turn')) {
        return;
    }
    if (node.turn.state === 'active') {
        await restore(ctx, 'undo', { ...node.target, turn: node.turn.id });
    }
}

/** Redo the undone turns from the oldest up to this one. */
export async function redoToHere(ctx: TurnbackContext, node: unknown): Promise<void> {
    if (!isNode(node, 'turn')) {
        return;
    }
    if (node.turn.state === 'undone') {
        await restore(ctx, 'redo', { ...node.target, turn: node.turn.id });
    }
}

export async function diffNode(ctx: TurnbackContext, node: unknown): Promise<void> {
    if (isNode(node, 'turn')) {
        await showTurnDiff(ctx, { ...node.target, turn: node.turn.id });
    } else if (isNode(node, 'file')) {
        await showTurnDiff(ctx, { ...node.target, turn: node.turn.id, path: node.file.path });
    }
}
