"""Out-of-domain sentences for ``add_out_of_domain``: kitchen and household-appliance instructions.

ASSET and SimpEval are Wikipedia sentences; APPLS added sentences of ACL papers to biomedical texts.
These were written for this project (no corpus of an unrelated domain ships with the installed
packages) and are far from encyclopaedic prose in topic and register.
"""

OUT_OF_DOMAIN: tuple[str, ...] = (
    "Preheat the oven to 200 degrees and grease a shallow baking tin with butter.",
    "Whisk the eggs with the sugar until the mixture is pale and doubles in volume.",
    "Fold in the flour a spoonful at a time so that the batter stays light.",
    "Press the start button twice to run the quick rinse programme.",
    "Keep the lid closed while the rice simmers, or the grains will cook unevenly.",
    "Clean the filter under running water once a month and let it dry before refitting it.",
    "Season the sauce with a pinch of salt and a squeeze of lemon just before serving.",
    "If the display shows a flashing light, unplug the machine and wait for ten seconds.",
    "Slice the onions thinly and fry them gently until they turn golden.",
    "Store the dough in the fridge overnight and roll it out the next morning.",
    "Descale the kettle with a mixture of vinegar and water every few weeks.",
    "Do not put metal containers in the microwave, because they can cause sparks.",
    "Let the cake cool in its tin for a few minutes before turning it out onto a rack.",
    "Set the thermostat a degree lower at night to save energy.",
    "Chop the herbs at the last moment so that they keep their colour and smell.",
    "Empty the crumb tray of the toaster regularly to avoid a burning smell.",
    "Stir the soup from time to time and add a little water if it becomes too thick.",
    "Hold the button for three seconds to pair the remote control with the television.",
    "Wrap the bread in a clean cloth to keep the crust crisp.",
    "Rinse the lentils well and soak them for an hour before cooking.",
    "Check that the door seal is clean, otherwise the dishwasher may leak.",
    "Grill the peppers until the skins blister, then peel them while they are warm.",
    "Replace the batteries of the smoke alarm once a year.",
    "Serve the pancakes warm with fresh berries and a spoonful of yoghurt.",
)
