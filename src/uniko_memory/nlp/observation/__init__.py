"""The rule-based P3 observation extractor, one module per concern.

Split so that each kind of rule can be read, tested and changed without the others in view;
:mod:`uniko_memory.nlp.observations` is the entry point other layers import. In the order a
sentence goes through them:

* :mod:`.lexicon` -- every word list the rules read, each with why it exists;
* :mod:`.words` -- English word forms (agreement, contractions, lemma repair, predicate keys);
* :mod:`.filler` -- pleasantries that make no statement, discourse markers a statement sheds;
* :mod:`.types` -- drafts, antecedents and the session's pronoun state;
* :mod:`.state` -- the render state of one sentence and its read-out as text;
* :mod:`.reference` -- what a third-person pronoun points to; nouns as antecedents;
* :mod:`.render` -- the rendering map (persons, contractions, agreement, dates, vocatives);
* :mod:`.clauses` -- clause heads and the clause of each;
* :mod:`.edits` -- words cut off a clause between two checks;
* :mod:`.triples` -- a clause's subject / predicate / object;
* :mod:`.checks` -- the rejection rules, each named and with its reason;
* :mod:`.draft` -- the order the above run in, and the draft of a clause.

Nothing is imported here, so that importing one module does not load the others.
"""
