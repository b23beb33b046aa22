// A thin wrapper over the VS Code functions the extension calls, so that unit tests can
// replace this one module (vi.mock) instead of the whole `vscode` namespace.
/* eslint-disable @typescript-eslint/no-explicit-any */
import {
    commands,
    ConfigurationChangeEvent,
    ConfigurationScope,
    Disposable,
    Event,
    Extension,
    extensions,
    InputBoxOptions,
    LogOutputChannel,
    MessageItem,
    MessageOptions,
    ProgressLocation,
    QuickPickItem,
    QuickPickOptions,
    StatusBarAlignment,
    StatusBarItem,
    TextDocument,
    TextDocumentContentProvider,
    TextEditor,
    TreeDataProvider,
    TreeView,
    TreeViewOptions,
    Uri,
    window,
    workspace,
    WorkspaceConfiguration,
    WorkspaceFolder,
} from 'vscode';

export function createOutputChannel(name: string): LogOutputChannel {
    return window.createOutputChannel(name, { log: true });
}

export function getConfiguration(section: string, scope?: ConfigurationScope): WorkspaceConfiguration {
    return workspace.getConfiguration(section, scope);
}

export function onDidChangeConfiguration(listener: (e: ConfigurationChangeEvent) => any): Disposable {
    return workspace.onDidChangeConfiguration(listener);
}

export function getWorkspaceFolders(): readonly WorkspaceFolder[] {
    return workspace.workspaceFolders ?? [];
}

export function getWorkspaceFolder(uri: Uri): WorkspaceFolder | undefined {
    return workspace.getWorkspaceFolder(uri);
}

export function onDidChangeWorkspaceFolders(listener: () => any): Disposable {
    return workspace.onDidChangeWorkspaceFolders(listener);
}

export function isWorkspaceTrusted(): boolean {
    return workspace.isTrusted;
}

export function getTextDocuments(): readonly TextDocument[] {
    return workspace.textDocuments;
}

export function getActiveTextEditor(): TextEditor | undefined {
    return window.activeTextEditor;
}

export const onDidChangeActiveTextEditor: Event<TextEditor | undefined> = (listener, thisArgs?, disposables?) =>
    window.onDidChangeActiveTextEditor(listener, thisArgs, disposables);

export function registerCommand(command: string, callback: (...args: any[]) => any, thisArg?: any): Disposable {
    return commands.registerCommand(command, callback, thisArg);
}

export function executeCommand<T = unknown>(command: string, ...rest: any[]): Thenable<T> {
    return commands.executeCommand<T>(command, ...rest);
}

export function registerTextDocumentContentProvider(scheme: string, provider: TextDocumentContentProvider): Disposable {
    return workspace.registerTextDocumentContentProvider(scheme, provider);
}

export function createStatusBarItem(id: string, alignment?: StatusBarAlignment, priority?: number): StatusBarItem {
    return window.createStatusBarItem(id, alignment, priority);
}

export function createTreeView<T>(viewId: string, options: TreeViewOptions<T>): TreeView<T> {
    return window.createTreeView(viewId, options);
}

export function registerTreeDataProvider<T>(viewId: string, provider: TreeDataProvider<T>): Disposable {
    return window.registerTreeDataProvider(viewId, provider);
}

export function showInformationMessage<T extends string | MessageItem>(
    message: string,
    ...items: T[]
): Thenable<T | undefined> {
    return window.showInformationMessage(message, ...(items as any[]));
}

export function showWarningMessage<T extends string | MessageItem>(
    message: string,
    options: MessageOptions,
    ...items: T[]
): Thenable<T | undefined> {
    return window.showWarningMessage(message, options, ...(items as any[]));
}

export function showErrorMessage<T extends string | MessageItem>(
    message: string,
    ...items: T[]
): Thenable<T | undefined> {
    return window.showErrorMessage(message, ...(items as any[]));
}

export function showQuickPick<T extends QuickPickItem>(items: T[] | Thenable<T[]>, options?: QuickPickOptions): Thenable<T | undefined> {
    return window.showQuickPick(items, options);
}

export function showInputBox(options?: InputBoxOptions): Thenable<string | undefined> {
    return window.showInputBox(options);
}

/** A notification with a progress spinner while `task` runs; `report` changes its message. */
export function withNotificationProgress<T>(title: string, task: (report: (message: string) => void) => Promise<T>): Thenable<T> {
    return window.withProgress({ location: ProgressLocation.Notification, title, cancellable: false }, (progress) =>
        task((message) => progress.report({ message })),
    );
}

export function getExtension<T = any>(id: string): Extension<T> | undefined {
    return extensions.getExtension<T>(id);
}
