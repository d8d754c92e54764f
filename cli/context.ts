import { Kafka, logLevel } from 'kafkajs';
import { kafkaConnection, securityEnv, securityFromEnv } from '../sdk';
import { readEnv } from '../sdk/service';
import { ConfluentSchemaRegistry, TopicNames } from '../sdk/wire';
import { AuditApiClient } from './api-client';
import { CliError, EXIT } from './exit-codes';
import type { Output } from './output';

/** The global options every command sees (flags win over environment variables). */
export interface GlobalOptions {
  api: string;
  token?: string;
  json?: boolean;
  brokers: string;
  registry: string;
  namespace: string;
}

/** What a command needs, made lazily: a command that talks to the API never connects to Kafka. */
export class Context {
  readonly out: Output;

  constructor(
    readonly o: GlobalOptions,
    io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream },
  ) {
    this.out = { json: o.json === true, ...io };
  }

  api(): AuditApiClient {
    return new AuditApiClient({ url: this.o.api, token: this.o.token });
  }

  kafka(): Kafka {
    const brokers = this.o.brokers
      .split(',')
      .map((b) => b.trim())
      .filter(Boolean);
    if (brokers.length === 0) throw new CliError('no Kafka brokers: set KAFKA_BROKERS or pass --brokers', EXIT.USAGE);
    return new Kafka({
      clientId: 'feromonios-cli',
      brokers,
      ...kafkaConnection(this.security().kafka),
      logLevel: logLevel.NOTHING,
      retry: { retries: 3 },
    });
  }

  registry(): ConfluentSchemaRegistry {
    return new ConfluentSchemaRegistry({ url: this.o.registry, auth: this.security().registry });
  }

  /** TLS/SASL and registry credentials, from the same variables as every service (docs/security.md). */
  private security(): ReturnType<typeof securityFromEnv> {
    return securityFromEnv(readEnv(securityEnv, process.env));
  }

  topics(): TopicNames {
    return new TopicNames(this.o.namespace);
  }
}
