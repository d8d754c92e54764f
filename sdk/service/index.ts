/**
 * @module @feromonios/sdk/service — plumbing of a Feromônios process, apart from colony code:
 * environment variables (typed, documented, rendered into `.env.example`), the process
 * lifecycle (`runMain`, graceful shutdown), the one producer configuration, retries with
 * backoff and jitter, transactions, and the DLQ reprocessing engine the audit API drives.
 */
export { env, readEnv, renderEnvExample, type EnvSpec, type EnvValues, type EnvVar } from './env';
export { archiveEnv, connectionEnv } from './config';
export { onShutdown, runMain } from './process';
export { jsonLogger, silentLogger, type LogFields, type LogLevel, type Logger } from '../runtime/logger';
export { kafkaLogs } from '../runtime/kafka-logs';
export { patchKafkajsEncoder, restoreKafkajsEncoder } from '../runtime/kafkajs-encoder';
export { patchKafkajsRecordDecoder, restoreKafkajsRecordDecoder } from '../runtime/kafkajs-decoder';
export { patchKafkajsResponseCopy, restoreKafkajsResponseCopy } from '../runtime/kafkajs-connection';
export { patchKafkajsFetchAhead, restoreKafkajsFetchAhead } from '../runtime/kafkajs-fetch-ahead';
export { isBrokerUnreachable, SessionProducer } from '../runtime/producer';
export { backoffDelay, sleep, type Backoff } from '../runtime/retry';
export { setNewest } from '../runtime/bounded-map';
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
export { criarParticaoDoMes, garantirParticoes as garantirParticoesDoLog, linhasSemMes } from '../log/partitions';
export {
  arquivarAntigos,
  arquivarMes,
  mesesArquivaveis,
  mesesDoLog,
  restaurarMes,
  verificarMes,
  type ArquivoDoManifesto,
  type Manifesto,
  type MesDoLog,
  type OpcoesArquivamento,
  type OpcoesLeituraManutencao,
  type ProgressoArquivo,
  type ResultadoArquivamento,
  type ResultadoRestauracao,
  type VerificacaoDoMes,
} from '../log/archive/archiver';
export {
  abrirDestino,
  BucketS3,
  DiretorioLocal,
  opcoesS3DoAmbiente,
  type DestinoArquivo,
  type OpcoesS3,
} from '../log/archive/destination';
export { LogArquivado, type OpcoesLeituraArquivo, type SegmentoArquivado } from '../log/archive/archived-log';
export { EventLogReader, sqlContagem, sqlDaPagina } from '../log/event-log-reader';
