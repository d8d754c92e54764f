/**
 * Decides where each service a run needs comes from. Pure logic (unit-tested):
 * - a variable that is set (`KAFKA_BROKERS`, `SCHEMA_REGISTRY_URL`, `DATABASE_URL`) wins and
 *   nothing is started for that service;
 * - when none is set and a Docker engine answers, Testcontainers runs Redpanda (Kafka API and
 *   schema registry) and PostgreSQL;
 * - otherwise the project's own scripts start Kafka and Apicurio from Maven jars and use the
 *   machine's PostgreSQL.
 */
import http, { type RequestOptions } from 'node:http';

export type ServiceSource = 'external' | 'testcontainers' | 'local';

export interface ServicePlan {
  kafka: ServiceSource;
  registry: ServiceSource;
  postgres: ServiceSource;
}

export const SERVICE_VARIABLES = ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL'] as const;

const isSet = (v: string | undefined): boolean => v !== undefined && v.trim() !== '';

export function chooseServices(env: Record<string, string | undefined>, dockerReachable: boolean): ServicePlan {
  const anySet = SERVICE_VARIABLES.some((k) => isSet(env[k]));
  const fallback: ServiceSource =
    !anySet && dockerReachable && env.FEROMONIOS_USE_TESTCONTAINERS !== '0' ? 'testcontainers' : 'local';
  return {
    kafka: isSet(env.KAFKA_BROKERS) ? 'external' : fallback,
    registry: isSet(env.SCHEMA_REGISTRY_URL) ? 'external' : fallback,
    postgres: isSet(env.DATABASE_URL) ? 'external' : fallback,
  };
}

/** True when a Docker engine answers on its socket (`DOCKER_HOST` or /var/run/docker.sock). */
export async function dockerReachable(env: Record<string, string | undefined> = process.env): Promise<boolean> {
  const host = env.DOCKER_HOST;
  const options: RequestOptions = { path: '/_ping', timeout: 1500 };
  if (host?.startsWith('tcp://')) {
    const u = new URL(host.replace('tcp://', 'http://'));
    options.host = u.hostname;
    options.port = Number(u.port || 2375);
  } else {
    options.socketPath = host?.startsWith('unix://') ? host.slice('unix://'.length) : '/var/run/docker.sock';
  }
  return new Promise((resolve) => {
    const req = http.get(options, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
  });
}
