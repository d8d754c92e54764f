import { securityEnv } from '../runtime/connection-security';
import { env } from './env';

/**
 * The log's cold archive (docs/archive.md): where `feromonios log archive` writes, and how every
 * reader of the log reaches an `s3://` destination recorded in the archive.
 */
export const archiveEnv = {
  FEROMONIOS_ARCHIVE_URL: env.string({
    default: '',
    doc: 'Where `feromonios log archive` writes months of the log: a directory, file:///dir or s3://bucket/prefix.',
  }),
  FEROMONIOS_ARCHIVE_S3_ENDPOINT: env.string({
    default: '',
    doc: 'S3-compatible endpoint (MinIO, Ceph…; path-style). Empty: AWS S3.',
  }),
  FEROMONIOS_ARCHIVE_S3_REGION: env.string({ default: '', doc: 'S3 region. Empty: us-east-1.' }),
  FEROMONIOS_ARCHIVE_S3_ACCESS_KEY_ID: env.string({
    default: '',
    doc: "S3 access key. Empty: the AWS SDK's own chain (AWS_ACCESS_KEY_ID, profiles, instance roles).",
  }),
  FEROMONIOS_ARCHIVE_S3_SECRET_ACCESS_KEY: env.secret({
    minLength: 1,
    default: '',
    doc: 'S3 secret key of FEROMONIOS_ARCHIVE_S3_ACCESS_KEY_ID.',
  }),
};

/** Variables every Feromônios process reads to reach the platform's services. */
export const connectionEnv = {
  KAFKA_BROKERS: env.brokers({ default: ['127.0.0.1:9092'], doc: 'Kafka/Redpanda bootstrap brokers.' }),
  SCHEMA_REGISTRY_URL: env.url({
    protocols: ['http', 'https'],
    default: 'http://127.0.0.1:8081/apis/ccompat/v7',
    doc: 'Confluent-compatible schema registry base URL (Redpanda: http://host:8081).',
  }),
  DATABASE_URL: env.url({
    protocols: ['postgres', 'postgresql'],
    default: 'postgres://postgres@127.0.0.1:5432/feromonios',
    doc: 'PostgreSQL holding the core schema (core.event_log, core.dead_letter_queue).',
  }),
  FEROMONIOS_TOPIC_NAMESPACE: env.string({
    default: 'feromonios',
    pattern: /^[A-Za-z0-9_-]{1,40}$/,
    form: '1-40 characters of [A-Za-z0-9_-]',
    doc: 'Prefix of every topic name (see docs/topics.md).',
  }),
  LOG_LEVEL: env.oneOf({
    values: ['debug', 'info', 'warn', 'error'] as const,
    default: 'info',
    doc: 'Minimum log level.',
  }),
  // TLS/SASL towards the brokers, basic auth for the registry (docs/security.md)
  ...securityEnv,
  ...archiveEnv,
};
