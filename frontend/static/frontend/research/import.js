// Shows the new-campaign fields only when "New campaign…" is chosen.
const target = document.getElementById("id_target");
const block = document.querySelector(".new-only");
if (target && block) {
  const sync = () => { block.hidden = target.value !== block.dataset.newValue; };
  target.addEventListener("change", sync);
  sync();
}
