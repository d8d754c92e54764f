import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FeromoniosError } from '../../errors';
import { archiveEnv } from '../../service/config';
import { readEnv } from '../../service/env';

/**
 * Where archived months of the log live (docs/archive.md): a local directory (`file:///…`, the
 * default) or an S3-compatible bucket (`s3://bucket/prefix`). Keys are relative paths like
 * `event_log/2026/09/part-00001.parquet`; a write is all-or-nothing (temporary file + rename
 * on disk; one PUT in S3), so a failed write never leaves half a file under its key.
 */
export interface DestinoArquivo {
  /** The destination's URI as recorded in the manifest (`file:///abs/dir` or `s3://bucket/prefix`). */
  readonly uri: string;
  gravar(chave: string, bytes: Uint8Array): Promise<void>;
  /** The object's bytes; `ARCHIVE_UNAVAILABLE` when it cannot be read (missing, unreachable). */
  ler(chave: string): Promise<Uint8Array>;
}

/** S3 connection settings; unset fields come from `FEROMONIOS_ARCHIVE_S3_*` and the AWS SDK's own chain. */
export interface OpcoesS3 {
  /** e.g. `http://127.0.0.1:4569` for MinIO or another S3-compatible server (path-style addressing). */
  endpoint?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
}

/**
 * The S3 settings of the environment (`FEROMONIOS_ARCHIVE_S3_ENDPOINT`, `_REGION`,
 * `_ACCESS_KEY_ID`, `_SECRET_ACCESS_KEY` or `_SECRET_ACCESS_KEY_FILE`); unset ones are left to the AWS SDK.
 */
export function opcoesS3DoAmbiente(env: Record<string, string | undefined> = process.env): OpcoesS3 {
  const v = readEnv(archiveEnv, env);
  const o: OpcoesS3 = {};
  if (v.FEROMONIOS_ARCHIVE_S3_ENDPOINT) o.endpoint = v.FEROMONIOS_ARCHIVE_S3_ENDPOINT;
  if (v.FEROMONIOS_ARCHIVE_S3_REGION) o.region = v.FEROMONIOS_ARCHIVE_S3_REGION;
  if (v.FEROMONIOS_ARCHIVE_S3_ACCESS_KEY_ID) o.accessKeyId = v.FEROMONIOS_ARCHIVE_S3_ACCESS_KEY_ID;
  if (v.FEROMONIOS_ARCHIVE_S3_SECRET_ACCESS_KEY) o.secretAccessKey = v.FEROMONIOS_ARCHIVE_S3_SECRET_ACCESS_KEY;
  return o;
}

const KEY = /^[a-z0-9_]+(\/[a-z0-9_.-]+)*$/;

/** A key the archive writes: lowercase path segments, no `..`, no leading `/`. */
function chaveValida(chave: string): string {
  if (!KEY.test(chave) || chave.split('/').some((s) => s === '.' || s === '..'))
    throw new FeromoniosError('BAD_REQUEST', `archive key ${JSON.stringify(chave)} is not a relative path`);
  return chave;
}

const unavailable = (uri: string, chave: string, op: string, cause: unknown): FeromoniosError =>
  new FeromoniosError(
    'ARCHIVE_UNAVAILABLE',
    `archive ${uri}: cannot ${op} ${chave}: ${cause instanceof Error ? cause.message : String(cause)}`,
    { retriable: true, cause },
  );

/** A local directory (created on first write). */
export class DiretorioLocal implements DestinoArquivo {
  readonly uri: string;
  private readonly raiz: string;

  constructor(diretorio: string) {
    this.raiz = path.resolve(diretorio);
    this.uri = pathToFileURL(this.raiz).href;
  }

  async gravar(chave: string, bytes: Uint8Array): Promise<void> {
    const alvo = path.join(this.raiz, chaveValida(chave));
    const tmp = `${alvo}.${randomUUID()}.tmp`;
    try {
      await fs.mkdir(path.dirname(alvo), { recursive: true });
      const h = await fs.open(tmp, 'w');
      try {
        await h.writeFile(bytes);
        await h.sync();
      } finally {
        await h.close();
      }
      await fs.rename(tmp, alvo);
    } catch (err) {
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      throw unavailable(this.uri, chave, 'write', err);
    }
  }

  async ler(chave: string): Promise<Uint8Array> {
    const alvo = path.join(this.raiz, chaveValida(chave));
    try {
      return new Uint8Array(await fs.readFile(alvo));
    } catch (err) {
      throw unavailable(this.uri, chave, 'read', err);
    }
  }
}

interface S3Like {
  send(command: unknown): Promise<{ Body?: { transformToByteArray(): Promise<Uint8Array> } }>;
}

/** An S3-compatible bucket through `@aws-sdk/client-s3` (an optional dependency, loaded on first use). */
export class BucketS3 implements DestinoArquivo {
  readonly uri: string;
  private client: S3Like | undefined;
  private sdk: Record<string, new (input: unknown) => unknown> | undefined;

  constructor(
    private readonly bucket: string,
    private readonly prefixo: string,
    private readonly opcoes: OpcoesS3 = {},
  ) {
    this.uri = `s3://${bucket}${prefixo ? `/${prefixo}` : ''}`;
  }

  private s3(): { client: S3Like; sdk: Record<string, new (input: unknown) => unknown> } {
    if (!this.client || !this.sdk) {
      let sdk: Record<string, new (input: unknown) => unknown>;
      try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        sdk = require('@aws-sdk/client-s3') as typeof sdk;
      } catch (cause) {
        throw new FeromoniosError('CONFIG_INVALID', `archive ${this.uri}: install @aws-sdk/client-s3 to use S3`, {
          cause,
        });
      }
      const o = this.opcoes;
      const S3Client = sdk.S3Client as new (input: unknown) => S3Like;
      this.client = new S3Client({
        region: o.region ?? 'us-east-1',
        ...(o.endpoint ? { endpoint: o.endpoint, forcePathStyle: true } : {}),
        ...(o.accessKeyId && o.secretAccessKey
          ? { credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } }
          : {}),
      });
      this.sdk = sdk;
    }
    return { client: this.client, sdk: this.sdk };
  }

  private key(chave: string): string {
    return this.prefixo ? `${this.prefixo}/${chaveValida(chave)}` : chaveValida(chave);
  }

  async gravar(chave: string, bytes: Uint8Array): Promise<void> {
    const { client, sdk } = this.s3();
    try {
      await client.send(new sdk.PutObjectCommand!({ Bucket: this.bucket, Key: this.key(chave), Body: bytes }));
    } catch (err) {
      throw unavailable(this.uri, chave, 'write', err);
    }
  }

  async ler(chave: string): Promise<Uint8Array> {
    const { client, sdk } = this.s3();
    const Key = this.key(chave);
    try {
      const r = await client.send(new sdk.GetObjectCommand!({ Bucket: this.bucket, Key }));
      if (!r.Body) throw new Error('empty body');
      return await r.Body.transformToByteArray();
    } catch (err) {
      throw unavailable(this.uri, chave, 'read', err);
    }
  }
}

/**
 * The destination a URI names: `file:///abs/dir`, a plain path (made absolute), or
 * `s3://bucket[/prefix]`. Anything else is `CONFIG_INVALID`.
 */
export function abrirDestino(uri: string, s3: OpcoesS3 = opcoesS3DoAmbiente()): DestinoArquivo {
  if (typeof uri !== 'string' || uri.trim() === '')
    throw new FeromoniosError('CONFIG_INVALID', 'archive destination: empty (set FEROMONIOS_ARCHIVE_URL)');
  if (uri.startsWith('s3://')) {
    const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/([A-Za-z0-9_.\-/]*?))?\/?$/.exec(uri);
    if (!m?.[1] || (m[2] ?? '').split('/').some((seg) => seg === '.' || seg === '..'))
      throw new FeromoniosError('CONFIG_INVALID', `archive destination ${uri}: not s3://bucket[/prefix]`);
    return new BucketS3(m[1], m[2] ?? '', s3);
  }
  if (uri.startsWith('file://')) return new DiretorioLocal(fileURLToPath(uri));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri))
    throw new FeromoniosError('CONFIG_INVALID', `archive destination ${uri}: only file:// and s3:// are supported`);
  return new DiretorioLocal(uri);
}
