/**
 * @module @feromonios/sdk/service — plumbing of a Feromônios process, apart from colony code:
 * environment variables (typed, documented, rendered into `.env.example`), the process
 * lifecycle (`runMain`, graceful shutdown), the one producer configuration, retries with
 * backoff and jitter, transactions, and the DLQ reprocessing engine the audit API drives.
 */
export { env, readEnv, renderEnvExample, type EnvSpec, type EnvValues, type EnvVar } from './env';
export { connectionEnv } from './config';
export { onShutdown, runMain } from './process';
export { jsonLogger, silentLogger, type LogFields, type LogLevel, type Logger } from '../runtime/logger';
export { kafkaLogs } from '../runtime/kafka-logs';
export { SessionProducer } from '../runtime/producer';
export { backoffDelay, sleep, type Backoff } from '../runtime/retry';
export { withTransaction } from '../runtime/transaction';
export { getOrCreate } from '../runtime/metrics';
export { endSpan, startBatchSpan } from '../runtime/tracing';
export { RetentionGapDetector, type LacunaDeRetencao } from '../consuming/retention-gaps';
export { DlqReprocessor, type DlqReprocessorDeps } from '../reprocessing/dlq-reprocessing';
export { retirarColonia, type ColoniaRetirada } from './retire-colony';
export {
  aclsDoCatalogo,
  aclsNoCluster,
  aplicarAcls,
  descreverAcl,
  diferencaAcls,
  planejarAcls,
  principalGerido,
  type Acl,
  type AclPrincipals,
  type CatalogoDeAcls,
  type DiferencaAcls,
  type PlanoAcls,
} from './acls';
