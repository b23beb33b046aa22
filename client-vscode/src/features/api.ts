// Typed access to the custom requests of protocol.md, over whatever connection is current.
import {
    CaptureParams,
    DiffParams,
    DiffResult,
    FileContentParams,
    FileContentResult,
    ListParams,
    ListResult,
    Methods,
    PruneParams,
    PruneResult,
    RescueParams,
    RescueResult,
    RestoreParams,
    RestoreResult,
    Turn,
} from '../common/protocol';

/** The part of a LanguageClient (or a vscode-jsonrpc connection) that sends requests. */
export interface Requester {
    sendRequest<R>(method: string, params: unknown): Promise<R>;
}

export class ServerNotRunningError extends Error {
    constructor() {
        super('The turnback server is not running.');
        this.name = 'ServerNotRunningError';
    }
}

/** Drops `undefined` fields: the server reads absent and null differently for some. */
function clean<T extends object>(params: T): T {
    return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined)) as T;
}

export class TurnbackApi {
    /** @param connection the current connection, or undefined while no server runs. */
    constructor(private readonly connection: () => Requester | undefined) {}

    get running(): boolean {
        return this.connection() !== undefined;
    }

    private send<R>(method: string, params: object): Promise<R> {
        const requester = this.connection();
        if (!requester) {
            return Promise.reject(new ServerNotRunningError());
        }
        return requester.sendRequest<R>(method, clean(params));
    }

    capture(params: CaptureParams = {}): Promise<Turn> {
        return this.send(Methods.capture, params);
    }

    undo(params: RestoreParams = {}): Promise<RestoreResult> {
        return this.send(Methods.undo, params);
    }

    redo(params: RestoreParams = {}): Promise<RestoreResult> {
        return this.send(Methods.redo, params);
    }

    list(params: ListParams = {}): Promise<ListResult> {
        return this.send(Methods.list, params);
    }

    diff(params: DiffParams = {}): Promise<DiffResult> {
        return this.send(Methods.diff, params);
    }

    fileContent(params: FileContentParams): Promise<FileContentResult> {
        return this.send(Methods.fileContent, params);
    }

    prune(params: PruneParams): Promise<PruneResult> {
        return this.send(Methods.prune, params);
    }

    rescue(params: RescueParams): Promise<RescueResult> {
        return this.send(Methods.rescue, params);
    }
}
