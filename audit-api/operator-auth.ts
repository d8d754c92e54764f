import { decodeJwt, errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { operatorIdProblem } from '../sdk/wire';
import { Denied, type DenialReason } from './problem';

export interface OperatorAuthOptions {
  secret: string;
  issuer: string;
  audience: string;
  /** Any of these in the `papel` (string) or `roles` (array) claim grants access. */
  roles: readonly string[];
  /** Oldest token accepted (`iat` this far back at most) and longest lifetime (`exp` − `iat`), in seconds. Default 12 h. */
  maxAgeSeconds?: number;
}

/** Who is calling, from a verified token. */
export interface Operator {
  /** The token's `sub`: an operator id (sdk/wire/storable.ts `OPERATOR_ID_RE`), recorded in the reprocessing audit trail. */
  sub: string;
  roles: string[];
}

const unauthorized = (reason: DenialReason, subject?: string): Denied =>
  new Denied(
    401,
    'nao-autenticado',
    'Unauthorized',
    'a valid operator token is required (Authorization: Bearer <jwt>)',
    reason,
    subject,
    { 'WWW-Authenticate': 'Bearer realm="feromonios-audit"' },
  );
const forbidden = (reason: DenialReason, subject?: string): Denied =>
  new Denied(403, 'proibido', 'Forbidden', 'this token does not grant access to the operator routes', reason, subject);

const DEFAULT_MAX_AGE_SECONDS = 12 * 3600;
const CLOCK_TOLERANCE_SECONDS = 5;

/**
 * The seed's `PapelOperadorGuard`, token part: exactly one `Authorization: Bearer` JWT signed
 * HS256 with the configured secret (every other algorithm, `none` included, is refused), not
 * expired, issued at most `maxAgeSeconds` ago and not in the future, with a lifetime no longer
 * than that, the configured `iss` and `aud`, a `sub` that is an operator id, and an operator
 * role. Every refusal is a `Denied` with a generic body and a precise `reason`.
 */
export class OperatorAuth {
  private readonly key: Uint8Array;
  private readonly maxAge: number;

  constructor(private readonly o: OperatorAuthOptions) {
    this.key = new TextEncoder().encode(o.secret);
    this.maxAge = o.maxAgeSeconds ?? DEFAULT_MAX_AGE_SECONDS;
  }

  /** `authorization`: every `Authorization` header of the request (Node's `headersDistinct`). */
  async verify(authorization: string | readonly string[] | undefined): Promise<Operator> {
    const headers =
      authorization === undefined ? [] : typeof authorization === 'string' ? [authorization] : authorization;
    if (headers.length === 0) throw unauthorized('token-missing');
    if (headers.length > 1) throw unauthorized('token-duplicated');
    const m = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/.exec(headers[0] as string);
    if (!m) throw unauthorized('token-malformed');
    const jwt = m[1] as string;
    const claimed = readableSubject(jwt);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, this.key, {
        algorithms: ['HS256'],
        issuer: this.o.issuer,
        audience: this.o.audience,
        requiredClaims: ['sub', 'exp', 'iat'],
        maxTokenAge: this.maxAge,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      }));
    } catch (err) {
      throw unauthorized(reasonOf(err), claimed);
    }
    const { iat, exp } = payload as { iat: number; exp: number };
    if (iat > Date.now() / 1000 + CLOCK_TOLERANCE_SECONDS || exp - iat > this.maxAge)
      throw unauthorized('token-age', claimed);
    if (operatorIdProblem(payload.sub) !== undefined) throw forbidden('subject');
    const sub = payload.sub as string;
    const roles = [
      ...(typeof payload.papel === 'string' ? [payload.papel] : []),
      ...(Array.isArray(payload.roles) ? payload.roles.filter((r): r is string => typeof r === 'string') : []),
    ];
    if (!roles.some((r) => this.o.roles.includes(r))) throw forbidden('role', sub);
    return { sub, roles };
  }
}

/** The unverified `sub` of a token, only when it is a valid operator id (safe to log). */
function readableSubject(jwt: string): string | undefined {
  try {
    const sub = (decodeJwt(jwt) as { sub?: unknown }).sub;
    return operatorIdProblem(sub) === undefined ? (sub as string) : undefined;
  } catch {
    return undefined;
  }
}

function reasonOf(err: unknown): DenialReason {
  if ((err as { claim?: unknown }).claim === 'iat') return 'token-age';
  if (err instanceof joseErrors.JWTExpired) return 'token-expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return 'token-claims';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'token-algorithm';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'token-signature';
  return 'token-malformed';
}

/**
 * Signs an operator token this API accepts (the quick start's demo token, scripts, tests):
 * `iss`/`aud` from the same options `OperatorAuth` verifies against, unless `claims` overrides
 * them. `o.alg` exists so tests can sign what must be refused.
 */
export function signOperatorToken(
  key: Pick<OperatorAuthOptions, 'secret' | 'issuer' | 'audience'>,
  claims: JWTPayload & { sub?: string; papel?: string; roles?: string[] },
  o: { expiresIn?: string | number; alg?: string } = {},
): Promise<string> {
  const jwt = new SignJWT({ iss: key.issuer, aud: key.audience, ...claims })
    .setProtectedHeader({ alg: o.alg ?? 'HS256' })
    .setExpirationTime(o.expiresIn ?? '1h');
  if (!('iat' in claims)) jwt.setIssuedAt(); // tests give `iat` (or `iat: undefined` for none)
  return jwt.sign(new TextEncoder().encode(key.secret));
}
