/**
 * `npm run colony:retire -- <colonia>`: deletes a retired colony's DLQ and reprocessing topics and
 * its consumer group (docs/topics.md, "Retiring a colony"). Refuses while the colony still runs.
 * Reads KAFKA_BROKERS and FEROMONIOS_TOPIC_NAMESPACE; prints what it removed as JSON.
 */
import { Kafka, logLevel } from 'kafkajs';
import { connectionEnv, readEnv, retirarColonia } from '../sdk/service';
import { TopicNames, withAdmin } from '../sdk/wire';

async function main(colonia: string | undefined): Promise<number> {
  if (!colonia) {
    console.error('usage: npm run colony:retire -- <colonia>');
    return 2;
  }
  const cfg = readEnv({
    KAFKA_BROKERS: connectionEnv.KAFKA_BROKERS,
    FEROMONIOS_TOPIC_NAMESPACE: connectionEnv.FEROMONIOS_TOPIC_NAMESPACE,
  });
  const kafka = new Kafka({
    clientId: 'feromonios-retire-colony',
    brokers: cfg.KAFKA_BROKERS,
    logLevel: logLevel.NOTHING,
  });
  const result = await withAdmin(kafka, (admin) =>
    retirarColonia(admin, new TopicNames(cfg.FEROMONIOS_TOPIC_NAMESPACE), colonia),
  );
  console.log(JSON.stringify(result));
  return 0;
}

main(process.argv[2])
  .then((code) => process.exit(code))
  .catch((err: unknown) => {
    console.error(err instanceof Error ? `error: ${err.message}` : err);
    process.exit(1);
  });
