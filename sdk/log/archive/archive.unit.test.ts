import fc from 'fast-check';
import { abrirDestino, BucketS3, DiretorioLocal } from './destination';
import { escreverParquet, gruposDoParquet, lerParquet, sha256, somaDoConteudo, type LinhaDoLog } from './parquet-file';

/** The archive's pure parts: the Parquet round trip and the destinations a URI may name. */

const uuid = fc.uuid().map((u) => u.toLowerCase());
// PostgreSQL's TIMESTAMPTZ(2): centiseconds, years 1970-2100
const instant = fc.integer({ min: 0, max: 4_102_444_800_00 }).map((cs) => new Date(cs * 10));
const json: fc.Arbitrary<unknown> = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const payload = fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 12 }), json, { maxKeys: 6 });

const row = (seq: number): fc.Arbitrary<LinhaDoLog> =>
  fc.record({
    sequence_number: fc.constant(String(seq)),
    event_id: uuid,
    tipo: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
    versao_schema: fc.constantFrom('1.0.0', '2.10.3'),
    timestamp: instant,
    origem: fc.constantFrom('D-1a', 'D-3', 'D-4'),
    correlacao_id: fc.option(uuid, { nil: null }),
    causation_id: fc.option(uuid, { nil: null }),
    tenant_id: fc.option(uuid, { nil: null }),
    payload,
    criado_em: instant,
    kafka_topic: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: null }),
    kafka_partition: fc.option(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { nil: null }),
    kafka_offset: fc.option(fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String), { nil: null }),
  });

const rows = fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 1, maxLength: 40 }).chain((gaps) => {
  let s = 0;
  return fc.tuple(...gaps.map((g) => row((s += g))));
});

describe('Parquet files of the archive', () => {
  it('give back every column of every row, byte for byte in the content checksum (property)', async () => {
    await fc.assert(
      fc.asyncProperty(rows, async (rs) => {
        const bytes = escreverParquet(rs, 7);
        const back = await lerParquet(bytes, 'test');
        // row groups of 7: each group's sequence range, and a group read alone
        const grupos = gruposDoParquet(bytes, 'test');
        expect(grupos.map((g) => [g.inicio, g.fim])).toEqual(
          Array.from({ length: Math.ceil(rs.length / 7) }, (_, i) => [i * 7, Math.min(rs.length, i * 7 + 7)]),
        );
        for (const g of grupos) {
          const part = await lerParquet(bytes, 'test', g);
          expect(part.map((r) => r.sequence_number)).toEqual(rs.slice(g.inicio, g.fim).map((r) => r.sequence_number));
          expect([g.sequence_min, g.sequence_max]).toEqual([
            BigInt(rs[g.inicio]!.sequence_number),
            BigInt(rs[g.fim - 1]!.sequence_number),
          ]);
        }
        expect(back.map(({ payload_json: _, ...r }) => r)).toEqual(rs);
        expect(back.map((r) => r.payload_json)).toEqual(rs.map((r) => JSON.stringify(r.payload)));
        expect(somaDoConteudo(back)).toBe(somaDoConteudo(rs));
      }),
      { numRuns: 60 },
    );
  });

  it('the content checksum changes with any one field', () => {
    const [r] = fc.sample(rows, { numRuns: 1, seed: 7 })[0] ?? [];
    if (!r) throw new Error('no sample');
    const base = somaDoConteudo([r]);
    for (const change of [
      { sequence_number: `${r.sequence_number}0` },
      { payload: { ...r.payload, extra: 1 } },
      { criado_em: new Date(r.criado_em.getTime() + 10) },
      { tenant_id: r.tenant_id ? null : '00000000-0000-4000-8000-000000000000' },
      { kafka_offset: r.kafka_offset === '1' ? '2' : '1' },
    ])
      expect(somaDoConteudo([{ ...r, ...change }])).not.toBe(base);
  });

  it('a file that is not Parquet, or truncated, is ARCHIVE_CORRUPT', async () => {
    await expect(lerParquet(new TextEncoder().encode('not parquet at all'), 'x.parquet')).rejects.toMatchObject({
      code: 'ARCHIVE_CORRUPT',
      message: expect.stringMatching(/x\.parquet/) as unknown,
    });
    const [rs] = fc.sample(rows, { numRuns: 1, seed: 3 });
    const bytes = escreverParquet(rs ?? []);
    await expect(lerParquet(bytes.slice(0, bytes.length - 9), 'y')).rejects.toMatchObject({ code: 'ARCHIVE_CORRUPT' });
    expect(sha256(bytes)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('archive destinations', () => {
  it('are a directory, file:// or s3://bucket/prefix; anything else is CONFIG_INVALID', () => {
    expect(abrirDestino('/var/lib/feromonios/arquivo')).toBeInstanceOf(DiretorioLocal);
    expect(abrirDestino('file:///var/lib/x').uri).toBe('file:///var/lib/x');
    const s3 = abrirDestino('s3://meu-bucket/log/ano', {});
    expect(s3).toBeInstanceOf(BucketS3);
    expect(s3.uri).toBe('s3://meu-bucket/log/ano');
    expect(abrirDestino('s3://meu-bucket', {}).uri).toBe('s3://meu-bucket');
    for (const bad of [
      '',
      '   ',
      'http://host/x',
      'ftp://h/x',
      's3://',
      's3://UPPER/x',
      's3://a/../../etc',
      's3://abc/../x',
    ])
      expect(() => abrirDestino(bad, {})).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }) as Error);
  });

  it('refuse keys that leave the destination (property: anything but lowercase relative segments)', async () => {
    const d = new DiretorioLocal('/tmp/feromonios-never-written');
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.constantFrom('../x', 'a/../../b', '/etc/passwd', 'a//b', 'A/B', 'a/./b', 'a\\b', 'a/b\u0000c'),
        ),
        async (k) => {
          fc.pre(!/^[a-z0-9_]+(\/[a-z0-9_.-]+)*$/.test(k) || k.split('/').some((s) => s === '.' || s === '..'));
          await expect(d.ler(k)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
          await expect(d.gravar(k, new Uint8Array(1))).rejects.toMatchObject({ code: 'BAD_REQUEST' });
        },
      ),
      { numRuns: 200 },
    );
  });
});
