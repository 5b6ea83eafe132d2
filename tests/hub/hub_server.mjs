// A local stand-in for the Hugging Face Hub, for tests/hub/pull.test.mjs. It serves files in
// the hub's URL layout (what huggingface_hub and `gemlet pull` request):
//   GET /api/models/{owner}/{name}/revision/{rev}[?blobs=true]   the listing: {"id", "sha",
//       "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256", "size", "pointerSize"}}]}
//   GET /{owner}/{name}/resolve/{rev}/{file}   small files directly; LFS files (weights,
//       tokenizer.json) as a 302 to a CDN-like URL on another host name ("localhost" for an
//       endpoint at 127.0.0.1), as the real hub does, whose requests must carry no token
//   GET /cdn/{sha256}   the LFS file, with Range support (206)
// Repositories (behaviour by kind):
//   public    plain
//   gated     401 without "Authorization: Bearer <token>" (listing and files), as the hub
//             answers for a gated repository
//   flaky     the first GET of each LFS file is cut off after half of it (the socket destroyed)
//   corrupt   the weights are served with one byte changed (the listing has the true sha256)
// Every request is logged in hub.requests ({method, url, range, auth, host}).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename } from 'node:path';

const LFS = new Set(['model.safetensors', 'tokenizer.json']);

export async function startHub({ files, repos, token, commit = 'c0ffee' + '0'.repeat(34) }) {
  const blobs = files.map((path) => {
    const data = readFileSync(path);
    const name = basename(path);
    return {
      name, data, lfs: LFS.has(name),
      sha256: createHash('sha256').update(data).digest('hex'),
      // git's blob id: sha1("blob <size>\0" + data)
      blobId: createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex'),
    };
  });
  const byName = new Map(blobs.map((b) => [b.name, b]));
  const bySha = new Map(blobs.map((b) => [b.sha256, b]));
  const requests = [];
  const cut = new Set();  // "repo/file" already cut once (flaky)

  const send = (res, status, body, headers = {}) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(text);
  };
  const authorized = (req) => req.headers.authorization === `Bearer ${token}`;

  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    requests.push({ method: req.method, url: url.pathname, range: req.headers.range ?? null,
                    auth: req.headers.authorization ?? null, host: req.headers.host });
    let m = url.pathname.match(/^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/);
    if (m) {
      const kind = repos[m[1]];
      if (!kind) return send(res, 404, { error: 'Repository not found' });
      if (kind === 'gated' && !authorized(req)) {
        return send(res, 401, { error: `Access to model ${m[1]} is restricted. You must have access to it and be authenticated to access it. Please log in.` });
      }
      return send(res, 200, {
        id: m[1], sha: commit, private: false, gated: kind === 'gated' ? 'manual' : false,
        siblings: blobs.map((b) => ({
          rfilename: b.name, size: b.data.length, blobId: b.blobId,
          ...(b.lfs ? { lfs: { sha256: b.sha256, size: b.data.length, pointerSize: 134 } } : {}),
        })).concat([{ rfilename: 'README.md', size: 3, blobId: '0'.repeat(40) },
                    { rfilename: 'onnx/model.onnx', size: 5, blobId: '1'.repeat(40) }]),
      });
    }
    m = url.pathname.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
    if (m) {
      const [, repo, , file] = m;
      const kind = repos[repo];
      const blob = byName.get(decodeURIComponent(file));
      if (!kind || !blob) return send(res, 404, { error: 'Entry not found' }, { 'X-Error-Code': 'EntryNotFound' });
      if (kind === 'gated' && !authorized(req)) {
        return send(res, 401, { error: 'Access to this resource is restricted' }, { 'X-Error-Code': 'GatedRepo' });
      }
      if (!blob.lfs) return serveBlob(req, res, blob.data);
      // LFS: redirect to the CDN on another host name, with the behaviour in the query.
      const cdnHost = req.headers.host.replace('127.0.0.1', 'localhost');
      res.writeHead(302, { Location: `http://${cdnHost}/cdn/${blob.sha256}?repo=${encodeURIComponent(repo)}` });
      return res.end();
    }
    m = url.pathname.match(/^\/cdn\/([0-9a-f]{64})$/);
    if (m && bySha.has(m[1])) {
      const blob = bySha.get(m[1]);
      const repo = url.searchParams.get('repo');
      const kind = repos[repo];
      let data = blob.data;
      if (kind === 'corrupt' && blob.name === 'model.safetensors') {
        data = Buffer.from(data);
        data[data.length - 1] ^= 0x55;
      }
      if (kind === 'flaky' && !cut.has(`${repo}/${blob.name}`)) {
        cut.add(`${repo}/${blob.name}`);
        const half = data.subarray(0, data.length >> 1);
        res.writeHead(200, { 'Content-Length': data.length, 'Accept-Ranges': 'bytes' });
        res.write(half, () => setTimeout(() => res.destroy(), 50));
        return;
      }
      return serveBlob(req, res, data);
    }
    send(res, 404, { error: 'not found' });
  });

  function serveBlob(req, res, data) {
    const r = (req.headers.range ?? '').match(/^bytes=(\d+)-$/);
    if (r) {
      const from = Number(r[1]);
      if (from >= data.length) {
        res.writeHead(416, { 'Content-Range': `bytes */${data.length}` });
        return res.end();
      }
      res.writeHead(206, { 'Content-Length': data.length - from, 'Accept-Ranges': 'bytes',
                           'Content-Range': `bytes ${from}-${data.length - 1}/${data.length}` });
      return res.end(data.subarray(from));
    }
    res.writeHead(200, { 'Content-Length': data.length, 'Accept-Ranges': 'bytes' });
    res.end(data);
  }

  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`, port, requests, commit, blobs,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
