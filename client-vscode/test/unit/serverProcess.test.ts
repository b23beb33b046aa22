// The server's process as the extension spawns it: real child processes (node itself
// playing a server that hangs, or an old turnback that exits at once).
import { describe, expect, it } from 'vitest';
import { ServerProcess, withTimeout } from '../../src/common/serverProcess';

function nodeServer(code: string): ServerProcess {
    return new ServerProcess({ command: process.execPath, args: ['-e', code], options: { env: process.env } });
}

describe('the server process', () => {
    // A turnback on PATH that never answers `initialize` froze activation and every restart.
    it('a start that never answers is given up after the timeout, and the process killed', async () => {
        const server = nodeServer('setInterval(() => {}, 1000)');
        await server.start();
        const answered = Promise.race([new Promise(() => undefined), server.exited]);
        await expect(withTimeout(answered, 200, 'no answer within 0.2 s')).rejects.toThrow('no answer within 0.2 s');
        expect(await server.ended(100)).toBeUndefined(); // still running
        server.kill();
        await expect(server.exited).rejects.toThrow(/it exited \(signal SIGTERM\)/);
    });

    // An older turnback without `serve` exited 2 and the user saw only the client's generic errors.
    it('a server that exits during its start says how it ended and what it printed last', async () => {
        const server = nodeServer("console.error('usage: turnback ...'); console.error(\"turnback: error: invalid choice: 'serve'\"); process.exit(2)");
        await server.start();
        expect(await server.ended(5000)).toBe('exit code 2');
        await expect(server.exited).rejects.toThrow('it exited (exit code 2)');
        expect(server.lastError()).toBe("turnback: error: invalid choice: 'serve'");
    });

    it('a command that does not exist fails the start at once', async () => {
        const server = new ServerProcess({ command: '/nonexistent/turnback', args: ['serve'], options: { env: process.env } });
        await expect(server.start()).rejects.toThrow(/ENOENT/);
    });

    it('withTimeout passes a result through and clears its timer', async () => {
        await expect(withTimeout(Promise.resolve(7), 60_000, 'late')).resolves.toBe(7);
    });
});
