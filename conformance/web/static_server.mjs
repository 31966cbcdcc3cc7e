// static_server.mjs — a plain static file server for the browser tests: the page from web/ and
// an engine folder, WITHOUT COOP/COEP (so the page is not cross-origin isolated: no
// SharedArrayBuffer, the postMessage fallback). Not plumb serve; only GET of files it is given.
import http from 'node:http';
import { createReadStream, statSync } from 'node:fs';
import path from 'node:path';

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm',
  '.gguf': 'application/octet-stream' };

// dirs: folders searched in order; files: {"/name": absolute path} served as well.
export function startStatic(dirs, files = {}) {
  const srv = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    let name = decodeURIComponent(url.pathname);
    if (name === '/') name = '/index.html';
    let file = files[name];
    if (!file && /^\/[A-Za-z0-9._-]+$/.test(name) && !name.includes('..'))
      for (const d of dirs) {
        const p = path.join(d, name);
        try { if (statSync(p).isFile()) { file = p; break; } } catch { /* next */ }
      }
    if (!file) { res.writeHead(404); res.end('not found'); return; }
    const size = statSync(file).size;
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream', 'Content-Length': size });
    if (req.method === 'HEAD') { res.end(); return; }
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => {
    resolve({ base: `http://127.0.0.1:${srv.address().port}`, close: () => new Promise((r) => srv.close(r)) });
  }));
}
