import { securityEnv } from '../runtime/connection-security';
import { env } from './env';

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
};
