/** The `aud` a key-binding JWT must carry for a workspace. */
export const audienceOf = (wid: string): string => `urn:svc:workspace:${wid}`;
