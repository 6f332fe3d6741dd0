/**
 * The baseline: a bare hapi server in its own process, one GET route answering a fixed JSON body
 * (the same bytes as the measured route). Prints its address as one JSON line once listening.
 */
import Hapi from '@hapi/hapi';

const body: unknown = JSON.parse(process.argv[2] ?? '{"ok":true}');
const server = Hapi.server({ host: '127.0.0.1', port: 0 });
server.route({ method: 'GET', path: '/bare', handler: () => body });
await server.start();
console.log(JSON.stringify({ listening: server.info.uri }));
process.on('SIGTERM', () => { void server.stop().then(() => process.exit(0)); });
