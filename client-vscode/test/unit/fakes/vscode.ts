// The few values (classes, enums) of the `vscode` module the extension's features use, for
// tests that run without VS Code. Functions are reached through src/common/vscodeapi.ts,
// which tests replace with ./vscodeapi.ts.
import { URI, Utils } from 'vscode-uri';

export const Uri = Object.assign(URI, { joinPath: Utils.joinPath });
export type Uri = URI;

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
    private listeners: Listener<T>[] = [];
    readonly event = (listener: Listener<T>) => {
        this.listeners.push(listener);
        return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
    };
    fire(value: T): void {
        for (const listener of [...this.listeners]) {
            listener(value);
        }
    }
    dispose(): void {
        this.listeners = [];
    }
}

export class Disposable {
    constructor(private readonly callOnDispose: () => unknown) {}
    static from(...items: { dispose(): unknown }[]): Disposable {
        return new Disposable(() => items.forEach((i) => i.dispose()));
    }
    dispose(): void {
        this.callOnDispose();
    }
}

export enum TreeItemCollapsibleState {
    None = 0,
    Collapsed = 1,
    Expanded = 2,
}

export class ThemeIcon {
    constructor(
        readonly id: string,
        readonly color?: unknown,
    ) {}
}

export class TreeItem {
    description?: string | boolean;
    tooltip?: string;
    iconPath?: unknown;
    contextValue?: string;
    resourceUri?: URI;
    command?: { command: string; title: string; arguments?: unknown[] };
    id?: string;
    constructor(
        public label: string,
        public collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
    ) {}
}

export enum StatusBarAlignment {
    Left = 1,
    Right = 2,
}

export class MarkdownString {
    constructor(public value = '') {}
}
