"""The scheduler's parts (engine/scheduler.py holds the Scheduler that puts them together).

request.py makes a submitted turn's Sequence; plan.py picks the tokens of the next step;
cache.py keeps what a slot's cache can keep of a new turn; results.py takes the step's sampled
tokens into their turns and ends turns; stopping.py says what each sampled token does to its turn.
"""
