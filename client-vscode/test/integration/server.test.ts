// Every request the extension sends, against the real server, as protocol.md specifies it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DiffResult, FileContentResult, ListResult, RescueResult, RestoreResult, Turn } from '../../src/common/protocol';
import { ServerCommands } from '../../src/common/protocol';
import { fileUri, Repo, Sandbox, TestServer } from './harness';

let sandbox: Sandbox;
let home: Repo;
let server: TestServer;

beforeAll(async () => {
    sandbox = new Sandbox();
    home = sandbox.repo();
    server = await TestServer.start(sandbox, { folder: home });
});

afterAll(async () => {
    await server?.stop();
    sandbox?.dispose();
});

/** A fresh repository; requests name it with `workspace`. */
function fresh(files?: Record<string, string>) {
    const repo = sandbox.repo(files);
    const ws = { workspace: repo.uri };
    return { repo, ws };
}

/** The agent's turn: edit, create, delete and rename files. */
function agentEdits(repo: Repo) {
    repo.write('src/app.py', "def welcome(name):\n    return 'hello ' + name\n");
    repo.write('tests/test_app.py', 'def test_it():\n    assert True\n');
    repo.remove('README.md');
}

describe('initialize', () => {
    it('lists the lens commands in executeCommandProvider (vscode-languageclient registers them)', () => {
        const commands: string[] = server.initializeResult.capabilities.executeCommandProvider.commands;
        expect([...commands].sort()).toEqual(Object.values(ServerCommands).sort());
        expect(server.initializeResult.capabilities.codeLensProvider).toBeTruthy();
    });
});

describe('capture, list, diff, fileContent', () => {
    it('capture "before" opens a turn; list includeFiles shows what it changed so far', async () => {
        const { repo, ws } = fresh();
        const captured = await server.request<Turn>('snapshot/capture', { ...ws, label: 'Fix the parser', metadata: { messageIndex: 12 } });
        expect(captured).toMatchObject({ session: 'default', turn: 1, label: 'Fix the parser', state: 'active', sealed: false, metadata: { messageIndex: 12 }, skipped: [] });
        expect(captured.id).toMatch(/^[0-9a-f]{16}$/);
        expect(captured).not.toHaveProperty('sealedAt');

        agentEdits(repo);
        const list = await server.request<ListResult>('snapshot/list', { ...ws, includeFiles: true });
        expect(list).toMatchObject({ session: 'default', canUndo: true, canRedo: false });
        expect(list.sessions).toEqual([expect.objectContaining({ id: 'default', turns: 1 })]);
        const files = list.turns[0].files!;
        expect(files.map((f) => [f.path, f.status]).sort()).toEqual([
            ['README.md', 'deleted'],
            ['src/app.py', 'modified'],
            ['tests/test_app.py', 'added'],
        ]);
        const withoutFiles = await server.request<ListResult>('snapshot/list', ws);
        expect(withoutFiles.turns[0]).not.toHaveProperty('files');
    });

    it('diff and fileContent give both sides of each file, for the diff editor', async () => {
        const { repo, ws } = fresh();
        const t = await server.request<Turn>('snapshot/capture', ws);
        agentEdits(repo);
        repo.rename('src/app.py', 'src/main.py');
        await server.request('snapshot/capture', { ...ws, phase: 'after' });

        const diff = await server.request<DiffResult>('snapshot/diff', { ...ws, turn: t.id, context: 0 });
        expect(diff.turn).toMatchObject({ id: t.id, sealed: true });
        const byPath = Object.fromEntries(diff.files.map((f) => [f.path, f]));
        expect(byPath['README.md'].status).toBe('deleted');
        expect(byPath['tests/test_app.py'].status).toBe('added');
        expect(byPath['src/main.py']).toMatchObject({ status: 'renamed', oldPath: 'src/app.py' });

        const before = await server.request<FileContentResult>('snapshot/fileContent', { ...ws, turn: t.turn, path: 'src/app.py', side: 'before' });
        expect(before).toMatchObject({ path: 'src/app.py', side: 'before', turn: t.id, exists: true, binary: false });
        expect(before.text).toContain('def greet');
        const after = await server.request<FileContentResult>('snapshot/fileContent', { ...ws, turn: t.id, path: 'src/main.py', side: 'after' });
        expect(after.text).toContain('def welcome');
        const added = await server.request<FileContentResult>('snapshot/fileContent', { ...ws, turn: t.id, path: 'tests/test_app.py', side: 'before' });
        expect(added).toMatchObject({ exists: false, text: '' });
        const deleted = await server.request<FileContentResult>('snapshot/fileContent', { ...ws, turn: t.id, path: 'README.md' });
        expect(deleted).toMatchObject({ side: 'after', exists: false });

        const onePath = await server.request<DiffResult>('snapshot/diff', { ...ws, turn: t.id, path: 'tests/test_app.py' });
        expect(onePath.files.map((f) => f.path)).toEqual(['tests/test_app.py']);
    });

    it('errors: an unknown turn is -32602 naming "turn"; "after" without a turn is noOpenTurn', async () => {
        const { ws } = fresh();
        const unknown = await server.requestError('snapshot/diff', { ...ws, turn: 99 });
        expect(unknown).toMatchObject({ code: -32602, data: { field: 'turn' } });
        const content = await server.requestError('snapshot/fileContent', { ...ws, path: 'README.md' });
        expect(content).toMatchObject({ code: -32602, data: { field: 'turn' } });
        const after = await server.requestError('snapshot/capture', { ...ws, phase: 'after' });
        expect(after).toMatchObject({ code: -32803, data: { reason: 'noOpenTurn' } });
        const nothing = await server.request<RestoreResult>('snapshot/undo', ws);
        expect(nothing).toEqual({ turnsUndone: 0, turns: [], files: [], kept: [], message: 'Nothing to undo', dryRun: false });
        const nothingToRedo = await server.request<RestoreResult>('snapshot/redo', ws);
        expect(nothingToRedo.message).toBe('Nothing to redo');
    });
});

describe('undo and redo', () => {
    it('undo restores every file of the turn; redo brings the turn back', async () => {
        const { repo, ws } = fresh();
        await server.request('snapshot/capture', { ...ws, label: 'agent' });
        agentEdits(repo);

        const dry = await server.request<RestoreResult>('snapshot/undo', { ...ws, dryRun: true });
        expect(dry).toMatchObject({ turnsUndone: 1, dryRun: true });
        expect(repo.read('tests/test_app.py')).toBeDefined();

        const undone = await server.request<RestoreResult>('snapshot/undo', { ...ws, count: 1 });
        expect(undone.turnsUndone).toBe(1);
        expect(undone.turns[0].state).toBe('undone');
        expect(Object.fromEntries(undone.files.map((f) => [f.path, f.action]))).toEqual({
            'src/app.py': 'modified',
            'tests/test_app.py': 'deleted',
            'README.md': 'created',
        });
        expect(undone.message).toMatch(/^Undid 1 turn/);
        expect(repo.read('src/app.py')).toContain('def greet');
        expect(repo.read('README.md')).toBe('# demo\n');
        expect(repo.read('tests/test_app.py')).toBeUndefined();

        const list = await server.request<ListResult>('snapshot/list', ws);
        expect(list).toMatchObject({ canUndo: false, canRedo: true });

        const redone = await server.request<RestoreResult>('snapshot/redo', ws);
        expect(redone.turnsRedone).toBe(1);
        expect(redone.turns[0].state).toBe('active');
        expect(repo.read('src/app.py')).toContain('def welcome');
        expect(repo.read('tests/test_app.py')).toBeDefined();
        expect(repo.read('README.md')).toBeUndefined();
    });

    it('count undoes several turns, newest first, and more than there are undoes them all', async () => {
        const { repo, ws } = fresh({ 'a.txt': '0\n' });
        for (let i = 1; i <= 3; i++) {
            await server.request('snapshot/capture', { ...ws, label: `step ${i}` });
            repo.write('a.txt', `${i}\n`);
        }
        const two = await server.request<RestoreResult>('snapshot/undo', { ...ws, count: 2 });
        expect(two.turns.map((t) => t.turn)).toEqual([3, 2]);
        expect(repo.read('a.txt')).toBe('1\n');
        const all = await server.request<RestoreResult>('snapshot/undo', { ...ws, count: 10 });
        expect(all.turnsUndone).toBe(1);
        expect(repo.read('a.txt')).toBe('0\n');
        const back = await server.request<RestoreResult>('snapshot/redo', { ...ws, count: 2 });
        expect(back.turns.map((t) => t.turn)).toEqual([1, 2]);
        expect(repo.read('a.txt')).toBe('2\n');
    });

    it('conflict: a manual edit after a sealed turn is -32803 with data.files; force overwrites; redo brings the edit back', async () => {
        const { repo, ws } = fresh();
        await server.request('snapshot/capture', { ...ws, label: 'agent' });
        repo.write('src/app.py', 'agent version\n');
        await server.request('snapshot/capture', { ...ws, phase: 'after' });
        repo.write('src/app.py', 'my manual edit\n');

        const conflict = await server.requestError('snapshot/undo', ws);
        expect(conflict.code).toBe(-32803);
        expect(conflict.data).toEqual({ reason: 'conflict', files: ['src/app.py'] });
        expect(conflict.message).toContain('src/app.py');
        expect(repo.read('src/app.py')).toBe('my manual edit\n');

        const forced = await server.request<RestoreResult>('snapshot/undo', { ...ws, force: true });
        expect(forced.turnsUndone).toBe(1);
        expect(repo.read('src/app.py')).toContain('def greet');

        await server.request('snapshot/redo', ws);
        expect(repo.read('src/app.py')).toBe('my manual edit\n');
    });

    it('conflict: unsaved editor changes to a file the undo would change', async () => {
        const { repo, ws } = fresh();
        await server.request('snapshot/capture', ws);
        repo.write('src/app.py', 'agent version\n');
        const uri = fileUri(repo.file('src/app.py'));
        await server.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: 'agent version\n' } });
        await server.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: 'agent version\nunsaved line\n' }] });

        const conflict = await server.requestError('snapshot/undo', ws);
        expect(conflict.data).toEqual({ reason: 'conflict', files: ['src/app.py'] });
        const forced = await server.request<RestoreResult>('snapshot/undo', { ...ws, force: true });
        expect(forced.turnsUndone).toBe(1);
        await server.notify('textDocument/didClose', { textDocument: { uri } });
    });

    it('redo conflicts with a change made since the undo', async () => {
        const { repo, ws } = fresh();
        await server.request('snapshot/capture', ws);
        repo.write('src/app.py', 'agent version\n');
        await server.request('snapshot/undo', ws);
        repo.write('src/app.py', 'edited after the undo\n');
        const conflict = await server.requestError('snapshot/redo', ws);
        expect(conflict.data).toEqual({ reason: 'conflict', files: ['src/app.py'] });
        await server.request('snapshot/redo', { ...ws, force: true });
        expect(repo.read('src/app.py')).toBe('agent version\n');
    });

    it('what a forced redo overwrote is a rescued version in the list; snapshot/rescue puts it back', async () => {
        const { repo, ws } = fresh();
        await server.request('snapshot/capture', ws);
        repo.write('src/app.py', 'agent version\n');
        await server.request('snapshot/undo', ws);
        repo.write('src/app.py', 'edited after the undo\n');
        const forced = await server.request<RestoreResult>('snapshot/redo', { ...ws, force: true });

        const list = await server.request<ListResult>('snapshot/list', { ...ws, limit: 1 });
        const [version] = list.rescued ?? [];
        expect(version).toMatchObject({ reason: 'forcedRedo', files: ['src/app.py'] });
        expect(forced.rescued).toEqual(version); // what the editor's "Put Back My Changes" names
        const result = await server.request<RescueResult>('snapshot/rescue', { ...ws, session: list.session, id: version.id });
        expect(repo.read('src/app.py')).toBe('edited after the undo\n');
        expect(result.rescued.id).toBe(version.id);
        expect(result.files).toEqual([{ path: 'src/app.py', action: 'modified' }]);
        expect(result.replaced).toMatchObject({ reason: 'replacedByRescue', files: ['src/app.py'] });
    });
});

describe('snapshot/didChange', () => {
    it('arrives for a capture by this server and for one by the CLI', async () => {
        const { repo, ws } = fresh();
        await server.request('snapshot/capture', { ...ws, session: 'watched' });
        await server.waitFor(() => server.didChange.some((n) => n.workspace === repo.uri && n.session === 'watched'), 'didChange after a capture');

        const seen = server.didChange.length;
        sandbox.cli(repo, 'capture', '--session', 'from-cli', '--label', 'CLI turn');
        await server.waitFor(
            () => server.didChange.slice(seen).some((n) => n.workspace === repo.uri && n.session === 'from-cli'),
            'didChange after a CLI capture',
        );
        const list = await server.request<ListResult>('snapshot/list', { ...ws, session: 'from-cli' });
        expect(list.turns[0].label).toBe('CLI turn');
        // The CLI capture is the most recent: requests without a session now default to it.
        expect((await server.request<ListResult>('snapshot/list', ws)).session).toBe('from-cli');
    });
});

describe('code lenses and their commands', () => {
    it('lenses on the hunks of the newest turn; revertHunk applies an edit; showDiff returns the diff', async () => {
        // Lenses are for documents inside a workspace folder: the server's own folder.
        const repo = home;
        const ws = { workspace: home.uri };
        const t = await server.request<Turn>('snapshot/capture', ws);
        const text = "def welcome(name):\n    return 'hello ' + name\n";
        repo.write('src/app.py', text);
        const uri = fileUri(repo.file('src/app.py'));
        await server.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });

        const lenses: any[] = await server.request('textDocument/codeLens', { textDocument: { uri } });
        expect(lenses.map((l) => l.command.title)).toEqual(['Agent turn 1', 'Undo turn', 'Revert hunk', 'Show diff']);
        expect(lenses.map((l) => l.command.command)).toEqual(['turnback.showDiff', 'turnback.undo', 'turnback.revertHunk', 'turnback.showDiff']);
        expect(lenses[1].command.arguments[0]).toEqual({ workspace: repo.uri, session: 'default', turn: t.id });
        expect(lenses[3].command.arguments[0]).toMatchObject({ turn: t.id, path: 'src/app.py' });

        const diff: DiffResult = await server.request('workspace/executeCommand', { command: 'turnback.showDiff', arguments: [lenses[3].command.arguments[0]] });
        expect(diff.files.map((f) => f.path)).toEqual(['src/app.py']);

        const reverted = await server.request('workspace/executeCommand', { command: 'turnback.revertHunk', arguments: lenses[2].command.arguments });
        expect(reverted).toEqual({ applied: true, message: 'Reverted the hunk' });
        const edit: any = server.appliedEdits.at(-1);
        expect(edit.edit.documentChanges[0].edits[0].newText).toBe('def greet(name):\n');
        await server.notify('textDocument/didClose', { textDocument: { uri } });
    });

    it('turnback.capture and turnback.undo as commands do what the requests do', async () => {
        const { repo, ws } = fresh();
        const t: Turn = await server.request('workspace/executeCommand', { command: 'turnback.capture', arguments: [{ ...ws, label: 'cmd' }] });
        expect(t.label).toBe('cmd');
        repo.write('README.md', 'changed\n');
        const undone: RestoreResult = await server.request('workspace/executeCommand', { command: 'turnback.undo', arguments: [ws] });
        expect(undone.turnsUndone).toBe(1);
        expect(repo.read('README.md')).toBe('# demo\n');
    });
});

describe('prune', () => {
    it('keeps the newest turns', async () => {
        const { repo, ws } = fresh({ 'a.txt': '0\n' });
        for (let i = 1; i <= 3; i++) {
            await server.request('snapshot/capture', ws);
            repo.write('a.txt', `${i}\n`);
        }
        const pruned: any = await server.request('snapshot/prune', { ...ws, keep: 1 });
        expect(pruned.removedTurns.map((t: any) => t.turn).sort()).toEqual([1, 2]);
        expect((await server.request<ListResult>('snapshot/list', ws)).turns.map((t) => t.turn)).toEqual([3]);
        const bad = await server.requestError('snapshot/prune', ws);
        expect(bad.code).toBe(-32602);
    });
});
