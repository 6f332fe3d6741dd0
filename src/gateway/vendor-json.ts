/**
 * A model vendor's JSON (a request body forwarded or translated, an answer or a stream event read
 * back): its shape is the vendor's, open-ended and versioned by them. The forwarder and the
 * translators read the fields they know where they use them, and pass the rest through untouched;
 * typing every vendor's every field here would only restate their documentation. The rest of the
 * gateway holds JSON as `Record<string, unknown>`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- open-ended vendor JSON, read field by field (see above)
export type VendorJson = Record<string, any>;
