// turnback for VS Code: starts `turnback serve` and shows the agent's turns, their diffs,
// undo and redo.
import * as path from 'path';
import type { ExtensionContext } from 'vscode';
import { Commands, CONTENT_SCHEME, ContextKeys, SECTION, TURNS_VIEW_ID } from './common/constants';
import { registerLogger, showOutput, traceInfo, traceVerbose } from './common/logging';
import { hasBundledWheel } from './common/privateEnv';
import { ServerManager } from './common/server';
import { needsRestart } from './common/settings';
import {
    createOutputChannel,
    createTreeView,
    executeCommand,
    onDidChangeActiveTextEditor,
    onDidChangeConfiguration,
    onDidChangeWorkspaceFolders,
    registerTextDocumentContentProvider,
} from './common/vscodeapi';
import { TurnbackApi } from './features/api';
import { registerCommands } from './features/commands';
import { currentFolder, rootFor, targetOf, TurnbackContext } from './features/context';
import { TurnContentProvider } from './features/diffView';
import { createMiddleware } from './features/middleware';
import { TurnStatusBar } from './features/statusBar';
import { TurnsNode, TurnsTreeProvider } from './features/treeView';

let manager: ServerManager | undefined;

/** Collapses bursts of refresh requests (a restore fires one, then didChange follows). */
function debounce(fn: () => void, ms: number): () => void {
    let timer: NodeJS.Timeout | undefined;
    return () => {
        if (timer) {
            clearTimeout(timer);
        }
        timer = setTimeout(() => {
            timer = undefined;
            fn();
        }, ms);
    };
}

export async function activate(context: ExtensionContext): Promise<void> {
    const output = createOutputChannel('turnback');
    context.subscriptions.push(output, registerLogger(output));
    traceInfo(`turnback extension ${context.extension?.packageJSON?.version ?? ''} activating`);

    let server: ServerManager | undefined;
    const api = new TurnbackApi(() => server?.current);
    let statusBar: TurnStatusBar | undefined;
    let tree: TurnsTreeProvider | undefined;
    let contents: TurnContentProvider | undefined;

    const refreshNow = () => {
        void statusBar?.update();
        tree?.refresh();
        contents?.refresh();
    };
    const refresh = debounce(refreshNow, 150);
    const ctx: TurnbackContext = {
        api,
        target: () => targetOf(currentFolder()),
        rootFor,
        refresh,
    };

    const wheelsDir = context.asAbsolutePath(path.join('bundled', 'wheels'));
    server = new ServerManager({
        outputChannel: output,
        middleware: createMiddleware(ctx),
        showOutput,
        openSettings: () => void executeCommand('workbench.action.openSettings', `@ext:turnback.turnback ${SECTION}.server`),
        // A development host without `make vsix` has no bundled server: turnback from PATH/Python.
        bundle: hasBundledWheel(wheelsDir)
            ? { wheelsDir, storageDir: context.globalStorageUri.fsPath, version: String(context.extension?.packageJSON?.version ?? '0') }
            : undefined,
    });
    manager = server;
    statusBar = new TurnStatusBar(ctx);
    tree = new TurnsTreeProvider(ctx);
    contents = new TurnContentProvider(api);
    let lastWorkspace = ctx.target().workspace;
    const view = createTreeView<TurnsNode>(TURNS_VIEW_ID, { treeDataProvider: tree, showCollapseAll: true });

    context.subscriptions.push(
        server,
        statusBar,
        contents,
        view,
        registerTextDocumentContentProvider(CONTENT_SCHEME, contents),
        ...registerCommands(ctx, { restartServer: () => server!.restart() }),
        server.onDidChangeRunning((running) => {
            void executeCommand('setContext', ContextKeys.serverRunning, running);
            refreshNow();
        }),
        server.onDidChangeTimeline((params) => {
            traceVerbose(`snapshot/didChange ${params.workspace} ${params.session}`);
            refresh();
        }),
        onDidChangeConfiguration((event) => {
            if (needsRestart(event)) {
                traceInfo('turnback.server settings changed: restarting the server');
                void server!.restart();
            }
        }),
        onDidChangeWorkspaceFolders(() => refresh()),
        onDidChangeActiveTextEditor(() => {
            // Multi-root: commands follow the active editor's folder, so does the status bar.
            const workspace = ctx.target().workspace;
            if (workspace !== lastWorkspace) {
                lastWorkspace = workspace;
                void statusBar?.update();
            }
        }),
    );

    void executeCommand('setContext', ContextKeys.serverRunning, false);
    await server.restart();
    refreshNow();
}

export async function deactivate(): Promise<void> {
    await manager?.stop();
    manager = undefined;
}

// Re-exported for tests and for other extensions that want the command ids.
export { Commands };
