// The extension's own code (commands, conflict modal, quick pick, tree, diff content) against
// the real server; only the VS Code functions are fakes.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/vscodeapi', () => import('../unit/fakes/vscodeapi'));

import * as api from '../unit/fakes/vscodeapi';
import { TurnbackApi } from '../../src/features/api';
import { captureSnapshot, redoTurn, sealTurn, undoTurn } from '../../src/features/commands';
import type { TurnbackContext } from '../../src/features/context';
import { showTurnDiff, TurnContentProvider } from '../../src/features/diffView';
import { showTurns, turnPickItems } from '../../src/features/quickPick';
import { TurnsTreeProvider, TurnNode } from '../../src/features/treeView';
import type { ListResult } from '../../src/common/protocol';
import { Repo, Sandbox, TestServer } from './harness';

let sandbox: Sandbox;
let repo: Repo;
let server: TestServer;
let ctx: TurnbackContext & { refresh: ReturnType<typeof vi.fn> };

beforeAll(async () => {
    sandbox = new Sandbox();
    repo = sandbox.repo();
    server = await TestServer.start(sandbox, { folder: repo });
});

afterAll(async () => {
    await server?.stop();
    sandbox?.dispose();
});

beforeEach(() => {
    api.resetVscodeApi();
    api.state.folders = [{ uri: { fsPath: repo.root, toString: () => repo.uri } as never, name: 'repo', index: 0 }];
    ctx = {
        api: new TurnbackApi(() => ({ sendRequest: (method, params) => server.request(method, params) })),
        target: () => ({ workspace: repo.uri }),
        rootFor: () => repo.root,
        refresh: vi.fn(),
    };
});

const overwrite = () => api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, ok: { title: string }) => ok);
const cancel = () => api.showWarningMessage.mockImplementationOnce(async (_m: string, _o: unknown, _ok: unknown, no: { title: string }) => no);

describe('an agent turn, seen and undone through the extension', () => {
    it('capture, agent edits, seal; tree, quick pick and diff show it', async () => {
        await captureSnapshot(ctx, { label: 'Rename greet' });
        repo.write('src/app.py', "def welcome(name):\n    return 'hello ' + name\n");
        repo.write('NOTES.md', 'new file\n');
        await sealTurn(ctx);

        const tree = new TurnsTreeProvider(ctx);
        const [session] = await tree.getChildren();
        expect(tree.getTreeItem(session).label).toBe('default');
        const turns = (await tree.getChildren(session)) as TurnNode[];
        expect(turns).toHaveLength(1);
        expect(tree.getTreeItem(turns[0]).label).toBe('Rename greet');
        const files = await tree.getChildren(turns[0]);
        expect(files.map((f) => tree.getTreeItem(f).label).sort()).toEqual(['NOTES.md', 'app.py']);

        const list = await server.request<ListResult>('snapshot/list', { includeFiles: true });
        const [item] = turnPickItems(list);
        expect(item.detail).toBe('2 files changed · active · finished');

        await showTurnDiff(ctx, { turn: turns[0].turn.id });
        const [command, , resources] = api.executeCommand.mock.calls.find(([c]) => c === 'vscode.changes')!;
        expect(command).toBe('vscode.changes');
        const provider = new TurnContentProvider(ctx.api);
        const sides: Record<string, [string | undefined, string | undefined]> = {};
        for (const [label, before, after] of resources) {
            // A file the turn created has no before side: VS Code shows it as added.
            sides[label.fsPath.slice(repo.root.length + 1)] = [
                before ? await provider.provideTextDocumentContent(before) : undefined,
                after ? await provider.provideTextDocumentContent(after) : undefined,
            ];
        }
        expect(sides['src/app.py'][0]).toContain('def greet');
        expect(sides['src/app.py'][1]).toContain('def welcome');
        expect(sides['NOTES.md']).toEqual([undefined, 'new file\n']);
    });

    it('a manual edit after the sealed turn: the modal; Cancel keeps everything', async () => {
        repo.write('src/app.py', 'my manual edit\n');
        cancel();
        const result = await undoTurn(ctx);
        expect(result).toBeUndefined();
        expect(api.showWarningMessage.mock.calls[0][1].detail).toContain('src/app.py');
        expect(repo.read('src/app.py')).toBe('my manual edit\n');
        expect(repo.read('NOTES.md')).toBe('new file\n');
    });

    it('"Overwrite my changes" undoes the turn; Redo brings the manual edit back', async () => {
        overwrite();
        const undone = await undoTurn(ctx);
        expect(undone?.turnsUndone).toBe(1);
        expect(repo.read('src/app.py')).toContain('def greet');
        expect(repo.read('NOTES.md')).toBeUndefined();
        expect(api.showInformationMessage.mock.calls[0][0]).toMatch(/^Undid 1 turn/);

        const redone = await redoTurn(ctx);
        expect(redone?.turnsRedone).toBe(1);
        expect(repo.read('src/app.py')).toBe('my manual edit\n');
        expect(repo.read('NOTES.md')).toBe('new file\n');
    });

    it('Show Turns → Undo To Here on the older of two turns undoes both', async () => {
        await captureSnapshot(ctx, { label: 'second' });
        repo.write('src/app.py', 'second turn\n');
        api.showQuickPick
            .mockImplementationOnce(async (items: any[]) => items.find((i) => i.turn.label === 'Rename greet'))
            .mockImplementationOnce(async (items: any[]) => items.find((i) => i.action === 'undo'));
        overwrite(); // the first turn was sealed and then edited by hand
        await showTurns(ctx);
        expect(repo.read('src/app.py')).toContain('def greet');
        const list = await server.request<ListResult>('snapshot/list', {});
        expect(list.turns.map((t) => t.state)).toEqual(['undone', 'undone']);
    });
});
