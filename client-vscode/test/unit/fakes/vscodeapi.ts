// Stand-in for src/common/vscodeapi.ts: every function is a vi.fn, with defaults that
// resetVscodeApi() restores before each test.
import { vi } from 'vitest';
import { URI } from 'vscode-uri';

export interface FakeDocument {
    uri: URI;
    isDirty: boolean;
    isClosed: boolean;
    getText(): string;
}

export interface FakeStatusBarItem {
    text: string;
    tooltip?: string;
    command?: string;
    name?: string;
    visible: boolean;
    show(): void;
    hide(): void;
    dispose(): void;
}

export const state = {
    folders: [] as { uri: URI; name: string; index: number }[],
    documents: [] as FakeDocument[],
    activeEditor: undefined as { document: FakeDocument } | undefined,
    statusBarItems: [] as FakeStatusBarItem[],
    commands: new Map<string, (...args: unknown[]) => unknown>(),
    config: {} as Record<string, unknown>,
};

export const createOutputChannel = vi.fn();
export const getConfiguration = vi.fn();
export const onDidChangeConfiguration = vi.fn();
export const getWorkspaceFolders = vi.fn();
export const getWorkspaceFolder = vi.fn();
export const onDidChangeWorkspaceFolders = vi.fn();
export const isWorkspaceTrusted = vi.fn();
export const getTextDocuments = vi.fn();
export const getActiveTextEditor = vi.fn();
export const onDidChangeActiveTextEditor = vi.fn();
export const registerCommand = vi.fn();
export const executeCommand = vi.fn();
export const registerTextDocumentContentProvider = vi.fn();
export const createStatusBarItem = vi.fn();
export const createTreeView = vi.fn();
export const registerTreeDataProvider = vi.fn();
export const showInformationMessage = vi.fn();
export const showWarningMessage = vi.fn();
export const showErrorMessage = vi.fn();
export const showQuickPick = vi.fn();
export const showInputBox = vi.fn();
export const withNotificationProgress = vi.fn();
export const getExtension = vi.fn();

const disposable = () => ({ dispose: () => undefined });

export function resetVscodeApi(): void {
    vi.resetAllMocks();
    state.folders = [{ uri: URI.file('/ws'), name: 'ws', index: 0 }];
    state.documents = [];
    state.activeEditor = undefined;
    state.statusBarItems = [];
    state.commands = new Map();
    state.config = {};
    getConfiguration.mockImplementation(() => ({
        get: (key: string, fallback?: unknown) => (key in state.config ? state.config[key] : fallback),
    }));
    onDidChangeConfiguration.mockImplementation(disposable);
    onDidChangeWorkspaceFolders.mockImplementation(disposable);
    onDidChangeActiveTextEditor.mockImplementation(disposable);
    getWorkspaceFolders.mockImplementation(() => state.folders);
    getWorkspaceFolder.mockImplementation((uri: URI) => state.folders.find((f) => uri.fsPath.startsWith(f.uri.fsPath)));
    isWorkspaceTrusted.mockReturnValue(true);
    getTextDocuments.mockImplementation(() => state.documents);
    getActiveTextEditor.mockImplementation(() => state.activeEditor);
    registerCommand.mockImplementation((id: string, fn: (...args: unknown[]) => unknown) => {
        state.commands.set(id, fn);
        return { dispose: () => state.commands.delete(id) };
    });
    executeCommand.mockResolvedValue(undefined);
    registerTextDocumentContentProvider.mockImplementation(disposable);
    createStatusBarItem.mockImplementation(() => {
        const item: FakeStatusBarItem = {
            text: '',
            visible: false,
            show() {
                item.visible = true;
            },
            hide() {
                item.visible = false;
            },
            dispose: () => undefined,
        };
        state.statusBarItems.push(item);
        return item;
    });
    createTreeView.mockImplementation(disposable);
    registerTreeDataProvider.mockImplementation(disposable);
    showInformationMessage.mockResolvedValue(undefined);
    showWarningMessage.mockResolvedValue(undefined);
    showErrorMessage.mockResolvedValue(undefined);
    showQuickPick.mockResolvedValue(undefined);
    showInputBox.mockResolvedValue(undefined);
    withNotificationProgress.mockImplementation((_title: string, task: (report: (message: string) => void) => Promise<unknown>) => task(() => undefined));
    getExtension.mockReturnValue(undefined);
}
