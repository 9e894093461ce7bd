// Drives the official TypeScript SDK (@anthropic-ai/sdk) against a
// self-hosted agentmem server: stores, memories, preconditions and their
// 409s, paging, depth and views, versions and redaction, archive.
// Run by TestMemoryStoresWithTheOfficialTypeScriptSDK with BASE_URL and
// API_KEY set; prints "ok" and exits 0 when every check holds.
const Anthropic = require('@anthropic-ai/sdk');
const crypto = require('crypto');
const assert = require('assert/strict');

const sha = (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');

async function expectError(p, status, type) {
  try {
    await p;
  } catch (e) {
    assert.equal(e.status, status, `status of ${e}`);
    assert.equal(e.error?.error?.type, type, JSON.stringify(e.error));
    return e.error.error;
  }
  assert.fail(`wanted a ${status} ${type}`);
}

async function main() {
  const client = new Anthropic({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0 });
  const ms = client.beta.memoryStores;

  const store = await ms.create({ name: 'ts-store', description: 'from TypeScript', metadata: { lang: 'ts' } });
  assert.match(store.id, /^memstore_/);
  assert.equal((await ms.retrieve(store.id)).description, 'from TypeScript');
  assert.equal((await ms.update(store.id, { name: 'ts-store-2' })).name, 'ts-store-2');

  const content = 'Releases go out on Tuesdays.\n';
  const mem = await ms.memories.create(store.id, { path: '/release.md', content });
  assert.match(mem.id, /^mem_/);
  assert.equal(mem.content_sha256, sha(content));
  assert.equal(mem.content, null, 'create answers the basic view');
  const read = await ms.memories.retrieve(mem.id, { memory_store_id: store.id });
  assert.equal(read.content, content);

  const conflict = await expectError(ms.memories.create(store.id, { path: '/release.md', content: 'x' }), 409, 'memory_path_conflict_error');
  assert.equal(conflict.conflicting_memory_id, mem.id);
  await expectError(ms.memories.update(mem.id, { memory_store_id: store.id, content: 'lost', precondition: { type: 'content_sha256', content_sha256: sha('other') } }), 409, 'memory_precondition_failed_error');
  const v2 = content + 'Hotfixes any day.\n';
  const upd = await ms.memories.update(mem.id, { memory_store_id: store.id, content: v2, precondition: { type: 'content_sha256', content_sha256: sha(content) } });
  assert.equal(upd.content_sha256, sha(v2));

  for (let i = 0; i < 9; i++) {
    await ms.memories.create(store.id, { path: `/notes/n${i}.md`, content: `note ${i}` });
  }
  await ms.memories.create(store.id, { path: '/notes/deep/a/b.md', content: 'deep' });
  const paths = [];
  for await (const item of ms.memories.list(store.id, { limit: 3 })) paths.push(item.path);
  assert.equal(paths.length, 11);
  assert.deepEqual(paths, [...paths].sort());
  const shallow = [];
  for await (const item of ms.memories.list(store.id, { path_prefix: '/notes/', depth: 1, limit: 4 })) shallow.push(`${item.type} ${item.path}`);
  assert.equal(shallow.length, 10);
  assert.ok(shallow.includes('memory_prefix /notes/deep/'), shallow.join(', '));
  const full = await ms.memories.list(store.id, { path_prefix: '/notes/', view: 'full', limit: 50 });
  assert.ok(full.data.length <= 20);
  assert.equal(full.data[0].content, 'deep');

  await expectError(ms.memories.delete(mem.id, { memory_store_id: store.id, expected_content_sha256: sha(content) }), 409, 'memory_precondition_failed_error');
  const del = await ms.memories.delete(mem.id, { memory_store_id: store.id, expected_content_sha256: sha(v2) });
  assert.equal(del.type, 'memory_deleted');
  await expectError(ms.memories.retrieve(mem.id, { memory_store_id: store.id }), 404, 'not_found_error');

  const ops = [];
  for await (const v of ms.memoryVersions.list(store.id, { memory_id: mem.id })) ops.push(v);
  assert.deepEqual(ops.map((v) => v.operation), ['deleted', 'modified', 'created']);
  const created = ops[2];
  assert.equal((await ms.memoryVersions.retrieve(created.id, { memory_store_id: store.id })).content, content);
  const red = await ms.memoryVersions.redact(created.id, { memory_store_id: store.id });
  assert.ok(red.redacted_at);
  const after = await ms.memoryVersions.retrieve(created.id, { memory_store_id: store.id });
  assert.equal(after.content, null);
  assert.equal(after.path, null);
  assert.equal(after.created_by.type, 'api_actor');
  assert.equal(after.created_at, created.created_at);

  await ms.archive(store.id);
  const archived = await expectError(ms.memories.create(store.id, { path: '/late.md', content: 'x' }), 400, 'invalid_request_error');
  assert.equal(archived.message, 'cannot modify archived resource');
  const listed = [];
  for await (const s of ms.list({ include_archived: true })) listed.push(s.id);
  assert.ok(listed.includes(store.id));
  assert.equal((await ms.delete(store.id)).type, 'memory_store_deleted');
  await expectError(ms.retrieve(store.id), 404, 'not_found_error');
  console.log('ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
