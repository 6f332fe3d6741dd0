import Joi from 'joi';
import { tagList, userId } from '../http/params.js';

/**
 * Blueprints and registering agents from them (docs/gate.md#machine-administration).
 * Template and blueprint ids are checked against the workspace by the service (unknown_template),
 * so here they are only bounded strings.
 */
const ref = Joi.string().trim().min(1).max(64);
const refs = Joi.array().items(ref).max(50).unique();

export const blueprintInputSchema = Joi.object({
  name: Joi.string().trim().min(1).max(200).required(),
  tags: tagList.default([]),
  templates: refs.default([]),
});
export interface BlueprintInput {
  name: string;
  tags: string[];
  templates: string[];
}

/**
 * A token's registration. `mandate` and `rules` come first so that, whatever else is wrong with
 * the body, a token sending rules of its own hears `template_only` (the route maps them).
 */
export const tokenRegistrationSchema = Joi.object({
  mandate: Joi.any()
    .forbidden()
    .messages({ 'any.unknown': 'a service token may not send a mandate: name templates instead' }),
  rules: Joi.any()
    .forbidden()
    .messages({ 'any.unknown': 'a service token may not send rules: name templates instead' }),
  blueprint: ref.required(),
  name: Joi.string().trim().min(1).max(200).required(),
  actsFor: Joi.alternatives(userId, Joi.string().trim().email({ tlds: false, minDomainSegments: 1 }).max(320))
    .allow(null)
    .messages({ 'alternatives.match': '{{#label}} must be a person id (usr_...) or an e-mail address' }),
  tags: tagList,
  templates: refs,
});

export type { RegistrationInput as Registration } from '../agents/registration.js';
