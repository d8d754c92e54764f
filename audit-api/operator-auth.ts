import { errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { HttpProblem } from './problem';

export interface OperatorAuthOptions {
  secret: string;
  issuer: string;
  audience: string;
  /** Any of these in the `papel` (string) or `roles` (array) claim grants access. */
  roles: readonly string[];
}

/** Who is calling, from a verified token. */
export interface Operator {
  /** The token's `sub`: an opaque operator id, recorded in the reprocessing audit trail. */
  sub: string;
  roles: string[];
}

/** A subject that looks like personal data (an e-mail address, a CPF) must not reach the audit table. */
const PERSONAL_SUBJECT = /@|\b\d{3}\.?\d{3}\.?\d{3}-?\d{2}\b/;

const unauthorized = (detail: string): HttpProblem =>
  new HttpProblem(
    401,
    'nao-autenticado',
    'Unauthorized',
    detail,
    {},
    { 'WWW-Authenticate': 'Bearer realm="feromonios-audit"' },
  );
const forbidden = (detail: string): HttpProblem => new HttpProblem(403, 'proibido', 'Forbidden', detail);

/**
 * The seed's `PapelOperadorGuard`, token part: a `Bearer` JWT signed HS256 with the configured
 * secret (every other algorithm, `none` included, is refused), not expired, with the
 * configured `iss` and `aud`, a `sub`, and an operator role.
 */
export class OperatorAuth {
  private readonly key: Uint8Array;

  constructor(private readonly o: OperatorAuthOptions) {
    this.key = new TextEncoder().encode(o.secret);
  }

  async verify(authorization: string | undefined): Promise<Operator> {
    const m = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/.exec(authorization ?? '');
    if (!m) throw unauthorized('an `Authorization: Bearer <jwt>` header is required');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(m[1] as string, this.key, {
        algorithms: ['HS256'],
        issuer: this.o.issuer,
        audience: this.o.audience,
        requiredClaims: ['sub', 'exp'],
        clockTolerance: 5,
      }));
    } catch (err) {
      throw unauthorized(describe(err));
    }
    const sub = payload.sub as string;
    if (!/^[\w.:@-]{1,255}$/.test(sub) || PERSONAL_SUBJECT.test(sub))
      throw forbidden(
        'the token subject must be an opaque operator id (not an e-mail or CPF): it is recorded in the audit trail',
      );
    const roles = [
      ...(typeof payload.papel === 'string' ? [payload.papel] : []),
      ...(Array.isArray(payload.roles) ? payload.roles.filter((r): r is string => typeof r === 'string') : []),
    ];
    if (!roles.some((r) => this.o.roles.includes(r)))
      throw forbidden(`an operator role is required (one of: ${this.o.roles.join(', ')})`);
    return { sub, roles };
  }
}

function describe(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return `the token's \`${err.claim}\` claim is not accepted (${err.reason})`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'the token algorithm is not accepted (HS256 only)';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the token signature is invalid';
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) return 'the token is malformed';
  return 'the token is not valid';
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
  return new SignJWT({ iss: key.issuer, aud: key.audience, ...claims })
    .setProtectedHeader({ alg: o.alg ?? 'HS256' })
    .setIssuedAt()
    .setExpirationTime(o.expiresIn ?? '1h')
    .sign(new TextEncoder().encode(key.secret));
}
